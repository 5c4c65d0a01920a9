#include "core/kv_cache_manager.h"

#include <algorithm>

#include "util/error.h"
#include "util/fault_injection.h"

namespace vllm {

KVCacheManager::KVCacheManager(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks,
                               int block_size, bool enable_prefix_caching)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching) {
    if (groups.empty() || groups.size() > kMaxKvCacheGroups || groups.size() != group_blocks.size())
        throw_runtime("internal error: 1 to " + std::to_string(kMaxKvCacheGroups) +
                      " KV cache groups, each with a block count, expected");
    for (size_t g = 0; g < groups.size(); ++g) groups_.emplace_back(groups[g], group_blocks[g], block_size);
}

BlockHashChain KVCacheManager::chain_of(SchedulerRequest& request) const {
    extend_block_hashes(request.block_hashes, request.tokens(), block_size_, request.adapter_key,
                        &request.encoder_inputs);
    return BlockHashChain(request.tokens(), request.block_hashes, block_size_, request.adapter_key);
}

CachedPrefix KVCacheManager::find_cached_prefix(SchedulerRequest& request) const {
    CachedPrefix found;
    found.blocks.resize(groups_.size());
    if (!prefix_caching_ || !request.reads_prefix_cache) return found;
    const BlockHashChain chain = chain_of(request);
    int hit = (request.num_tokens() - 1) / block_size_;
    // Each group can only shorten the hit, and a shorter hit can change what
    // another group finds (a sliding group needs the window before its end):
    // go round until every group in a row supplies the same length.
    const int n = num_groups();
    int agreed = 0;
    for (int g = 0; agreed < n; g = (g + 1) % n) {
        const int h = groups_[g].find_longest_hit(chain, hit, found.blocks[g]);
        agreed = h == hit ? agreed + 1 : 1;
        hit = h;
    }
    found.num_tokens = hit * block_size_;
    return found;
}

bool KVCacheManager::allocate(SchedulerRequest& request, int num_new_tokens, const CachedPrefix& cached_prefix) {
    fault::maybe_fail(fault::Point::KvCacheAllocate);
    Entry& entry = entries_[&request];
    if (entry.tables.empty()) entry.tables.resize(groups_.size());
    const bool adopting = !cached_prefix.blocks.empty();
    const int computed = request.num_computed_tokens + cached_prefix.num_tokens;
    const int blocks_after = (computed + num_new_tokens + block_size_ - 1) / block_size_;
    int need[kMaxKvCacheGroups] = {};
    for (int g = 0; g < num_groups(); ++g) {
        const BlockPool& pool = groups_[g].pool();
        int have = static_cast<int>(entry.tables[g].size());
        // Adopting a cached block that sits in the free queue uses up a free block too.
        int adopt_from_free = 0;
        if (adopting) {
            have += static_cast<int>(cached_prefix.blocks[g].size());
            for (int32_t b : cached_prefix.blocks[g]) adopt_from_free += b != kNullBlock && pool.is_free(b) ? 1 : 0;
        }
        need[g] = groups_[g].blocks_needed(have, blocks_after);
        if (need[g] + adopt_from_free > pool.num_free()) {
            if (entry.tables[0].empty()) entries_.erase(&request);
            return false;
        }
    }
    // Memory first, so that a failed allocation (std::bad_alloc) leaves
    // the pools and tables as they were.
    for (int g = 0; g < num_groups(); ++g)
        entry.tables[g].reserve(entry.tables[g].size() + (adopting ? cached_prefix.blocks[g].size() : 0) + need[g]);
    for (int g = 0; g < num_groups(); ++g) {
        BlockPool& pool = groups_[g].pool();
        std::vector<int32_t>& table = entry.tables[g];
        if (adopting)
            for (int32_t b : cached_prefix.blocks[g]) {
                if (b != kNullBlock) pool.touch(b);
                table.push_back(b);
            }
        for (int i = 0; i < need[g]; ++i) table.push_back(pool.allocate());
    }
    if (cached_prefix.num_tokens > 0) {
        // The adopted blocks are in the prefix cache already.
        entry.num_cached_blocks = std::max(entry.num_cached_blocks, cached_prefix.num_tokens / block_size_);
        request.num_computed_tokens = computed;
    }
    return true;
}

void KVCacheManager::commit_computed(SchedulerRequest& request) {
    auto it = entries_.find(&request);
    if (it == entries_.end()) return;
    Entry& entry = it->second;
    if (prefix_caching_) {
        const BlockHashChain chain = chain_of(request);
        const int full = std::min(request.num_computed_tokens / block_size_, chain.num_blocks());
        for (int i = entry.num_cached_blocks; i < full; ++i) {
            const BlockKey key = chain.key(i);
            for (int g = 0; g < num_groups(); ++g) {
                if (groups_[g].spec().recurrent) continue;  // a state slot is no block of positions
                const int32_t block = entry.tables[g][i];
                if (block != kNullBlock) groups_[g].pool().cache(block, key);
            }
        }
        entry.num_cached_blocks = std::max(entry.num_cached_blocks, full);
    }
    // After caching: the blocks given back keep their content in the LRU.
    for (int g = 0; g < num_groups(); ++g) groups_[g].remove_skipped_blocks(entry.tables[g], request.num_computed_tokens);
}

void KVCacheManager::free(const SchedulerRequest& request) {
    auto it = entries_.find(&request);
    if (it == entries_.end()) return;
    for (int g = 0; g < num_groups(); ++g) {
        // Tail first, so a shared head is evicted last.
        std::vector<int32_t> tail_first;
        const std::vector<int32_t>& table = it->second.tables[g];
        for (auto b = table.rbegin(); b != table.rend(); ++b)
            if (*b != kNullBlock) tail_first.push_back(*b);
        groups_[g].pool().release(tail_first);
    }
    entries_.erase(it);
}

int KVCacheManager::insert_cached_block(const BlockKey& key,
                                        const std::function<void(int group, int32_t block)>& fill) {
    int held = 0;
    for (int g = 0; g < num_groups(); ++g) {
        if (groups_[g].spec().recurrent) continue;  // holds no K/V (the engine refuses KV transfer for it)
        BlockPool& pool = groups_[g].pool();
        if (pool.find_cached(key) >= 0) {
            ++held;
            continue;
        }
        const int32_t block = pool.allocate();
        if (block < 0) continue;  // every block is in use: this group recomputes
        fill(g, block);
        pool.cache(block, key);
        pool.release({block});
        ++held;
    }
    return held;
}

void KVCacheManager::record_events(KvCacheEventSink* sink) {
    for (int g = 0; g < num_groups(); ++g)
        if (!groups_[g].spec().recurrent) groups_[g].pool().record_events(sink, g);
}

const std::vector<int32_t>& KVCacheManager::block_table(const SchedulerRequest& request, int group) const {
    auto it = entries_.find(&request);
    if (it == entries_.end()) throw_runtime("internal error: a scheduled request has no KV blocks");
    return it->second.tables[group];
}

}  // namespace vllm
