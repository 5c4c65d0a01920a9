// Which KV blocks each request uses, and the automatic prefix cache.
//
// A request's block table covers its computed tokens plus the ones being
// computed this step. With prefix caching on, every full block is known by
// a hash chain over its tokens (BlockKey): a request whose prompt starts
// with blocks some earlier request computed reuses them instead of
// recomputing them, as vLLM V1's KVCacheManager does.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/block_pool.h"
#include "engine/request.h"

namespace vllm {

class KVCacheManager {
public:
    KVCacheManager(int num_blocks, int block_size, bool enable_prefix_caching);

    int block_size() const { return block_size_; }
    bool prefix_caching() const { return prefix_caching_; }
    const BlockPool& pool() const { return pool_; }

    // Cached blocks that hold the start of the request's tokens (at most all
    // but its last token: that one is always computed, for its logits).
    // Looks only; nothing is reserved.
    std::vector<int32_t> find_cached_prefix(const Request& request) const;

    // Makes room for `num_new_tokens` more tokens after the request's
    // computed ones, first adopting `cached_prefix` (from find_cached_prefix,
    // only on admission). False, with nothing changed, when too few blocks
    // are free.
    bool allocate(Request& request, int num_new_tokens, const std::vector<int32_t>& cached_prefix = {});

    // Records the request's newly full, computed blocks in the prefix cache.
    void cache_full_blocks(const Request& request);

    // Gives back all the request's blocks (they stay cached until evicted).
    void free(const Request& request);

    const std::vector<int32_t>& block_table(const Request& request) const;

private:
    struct Entry {
        std::vector<int32_t> blocks;
        std::vector<uint64_t> hashes;  // of the full blocks cached so far, in order
    };
    BlockKey key_of(const Request& request, int block_index, uint64_t parent_hash) const;

    int block_size_;
    bool prefix_caching_;
    BlockPool pool_;
    std::unordered_map<const Request*, Entry> entries_;
};

}  // namespace vllm
