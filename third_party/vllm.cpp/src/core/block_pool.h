// The KV blocks' bookkeeping: reference counts, the free queue, and the
// prefix cache's index of full blocks by content.
//
// A block with no reference is free. Free blocks wait in one queue in the
// order they were freed; allocation takes the oldest, so a freed block that
// still holds cached content (it has a key) survives as long as possible:
// the queue is the prefix cache's LRU. A cached free block that a new request
// hits is taken out of the queue again (touch). Not thread-safe: the engine
// loop owns it.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/kv_cache_events.h"

namespace vllm {

// A block-table entry that holds no block: a sliding-window group's blocks
// that have left every future query's window are given back and replaced
// by it. Attention never reads one (check_block_tables in
// model/blocks/paged_attention.h refuses a batch that would).
constexpr int32_t kNullBlock = -1;

// How a lookup names a full block (block_hash_chain.h): its chain hash, the
// hash of the block before it and its tokens (block_size ids, borrowed).
// Two blocks with equal keys hold equal K/V.
struct BlockKey {
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    const int32_t* tokens = nullptr;
};

class BlockPool {
public:
    BlockPool(int num_blocks, int block_size);

    int num_blocks() const { return num_blocks_; }
    // Blocks nobody references (cached or not): what allocation can use.
    int num_free() const { return num_free_; }
    int num_cached() const { return static_cast<int>(cached_.size()); }
    bool is_free(int32_t block) const { return in_free_queue_[block]; }

    // Takes the least recently freed block (evicting its cached content);
    // -1 when every block is referenced. The block starts with one reference.
    int32_t allocate();
    // One more reference to `block`; a free block leaves the free queue.
    void touch(int32_t block);
    // Drops one reference from each block; blocks that reach zero join the
    // free queue in the given order (callers pass a sequence's blocks tail
    // first, so its shared head is evicted last).
    void release(const std::vector<int32_t>& blocks);

    // The cached block holding `key`, or -1.
    int32_t find_cached(const BlockKey& key) const;
    // Records that `block` (referenced, full) holds `key`. A block already
    // cached, or a key some other block already holds, is left as it is.
    void cache(int32_t block, const BlockKey& key);

    // From now on, appends a Stored event to `sink` for each block cache()
    // records and a Removed event for each cached block allocate() evicts,
    // naming them as group `group` (nullptr: stop).
    void record_events(KvCacheEventSink* sink, int group) {
        events_ = sink;
        event_group_ = group;
    }

private:
    void unlink(int32_t block);
    void push_back_free(int32_t block);
    void evict(int32_t block);
    bool holds(int32_t block, const BlockKey& key) const;

    int num_blocks_;
    int block_size_;
    int num_free_ = 0;
    std::vector<int32_t> ref_count_;
    // The free queue: an intrusive doubly linked list over block ids, so a
    // cached block can leave it from the middle in O(1). -1 ends it.
    std::vector<int32_t> prev_, next_;
    std::vector<bool> in_free_queue_;
    int32_t head_ = -1, tail_ = -1;
    // Prefix cache: chain hash -> block, and each cached block's key (its
    // tokens in one flat array, block_size per block), kept to verify hits.
    std::unordered_multimap<uint64_t, int32_t> cached_;
    std::vector<uint64_t> hash_, parent_hash_;
    std::vector<int32_t> tokens_;
    std::vector<bool> has_key_;
    KvCacheEventSink* events_ = nullptr;
    int event_group_ = 0;
};

}  // namespace vllm
