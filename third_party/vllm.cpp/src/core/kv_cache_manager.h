// Which KV blocks each request uses, and the automatic prefix cache.
//
// The model's layers fall into KV cache groups (kv_cache_group.h): one for
// full attention, one per sliding-window width. A request has one block
// table per group; each covers its computed tokens plus the ones being
// computed this step, except that a sliding group's blocks which have left
// every future query's window are given back and read kNullBlock. With
// prefix caching on, every full block is known by a hash chain over its
// tokens (block_hash_chain.h), the same chain in every group: a request whose prompt
// starts with blocks some earlier request computed reuses them instead of
// recomputing them, as vLLM V1's KVCacheManager (with its
// HybridKVCacheCoordinator for several groups) does.
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/kv_cache_group.h"
#include "core/scheduler_request.h"

namespace vllm {

// A prefix-cache hit: its length, and per group the blocks to adopt.
struct CachedPrefix {
    int num_tokens = 0;
    std::vector<std::vector<int32_t>> blocks;  // [group][block], kNullBlock where not needed
};

class KVCacheManager {
public:
    // group_blocks[g]: the size of group g's block pool.
    KVCacheManager(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int block_size,
                   bool enable_prefix_caching);

    int block_size() const { return block_size_; }
    bool prefix_caching() const { return prefix_caching_; }
    int num_groups() const { return static_cast<int>(groups_.size()); }
    const KVCacheGroup& group(int g) const { return groups_[g]; }

    // The longest cached start of the request's tokens (at most all but its
    // last token: that one is always computed, for its logits) that every
    // group can supply. Looks only; nothing is reserved (the request's
    // block hashes are extended to its tokens).
    CachedPrefix find_cached_prefix(SchedulerRequest& request) const;

    // Makes room in every group for `num_new_tokens` more tokens after the
    // request's computed ones, first adopting `cached_prefix` (from
    // find_cached_prefix, only on admission). False, with nothing changed,
    // when some group has too few free blocks.
    bool allocate(SchedulerRequest& request, int num_new_tokens, const CachedPrefix& cached_prefix = {});

    // After the request's computed tokens advanced: records its newly full
    // blocks in the prefix cache, then gives back the sliding groups' blocks
    // that left the window.
    void commit_computed(SchedulerRequest& request);

    // Gives back all the request's blocks (they stay cached until evicted).
    void free(const SchedulerRequest& request);

    const std::vector<int32_t>& block_table(const SchedulerRequest& request, int group) const;

    // Adds a block computed elsewhere (KV transfer) to the prefix cache of
    // every group that lacks it: takes a free block, has `fill(group,
    // block)` write its K/V, records its key and frees it again, so it sits
    // in the LRU like any cached block until a request adopts it. Returns
    // how many groups hold the block afterwards.
    int insert_cached_block(const BlockKey& key, const std::function<void(int group, int32_t block)>& fill);

    // KV cache events: every group that keeps blocks of positions appends
    // its blocks entering and leaving the prefix cache to `sink` (nullptr:
    // stop). The recurrent-state group caches nothing, so it reports nothing.
    void record_events(KvCacheEventSink* sink);

private:
    struct Entry {
        std::vector<std::vector<int32_t>> tables;  // per group
        int num_cached_blocks = 0;  // leading full blocks already in the prefix cache (one chain for all groups)
    };

    // The request's chain, its hashes extended to every full block.
    BlockHashChain chain_of(SchedulerRequest& request) const;

    int block_size_;
    bool prefix_caching_;
    std::vector<KVCacheGroup> groups_;
    std::unordered_map<const SchedulerRequest*, Entry> entries_;
};

}  // namespace vllm
