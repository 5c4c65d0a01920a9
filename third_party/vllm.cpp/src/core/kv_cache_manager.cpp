#include "core/kv_cache_manager.h"

#include <algorithm>

#include "util/error.h"

namespace vllm {

KVCacheManager::KVCacheManager(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks,
                               int block_size, bool enable_prefix_caching)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching) {
    if (groups.empty() || groups.size() > kMaxKvCacheGroups || groups.size() != group_blocks.size())
        throw_runtime("internal error: 1 to " + std::to_string(kMaxKvCacheGroups) +
                      " KV cache groups, each with a block count, expected");
    for (size_t g = 0; g < groups.size(); ++g) groups_.emplace_back(groups[g], group_blocks[g], block_size);
}

CachedPrefix KVCacheManager::find_cached_prefix(const SchedulerRequest& request) const {
    CachedPrefix found;
    found.blocks.resize(groups_.size());
    if (!prefix_caching_) return found;
    BlockHashChain chain(request.tokens(), block_size_);
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
        need[g] = std::max(0, blocks_after - have);
        if (need[g] + adopt_from_free > pool.num_free()) {
            if (entry.tables[0].empty()) entries_.erase(&request);
            return false;
        }
    }
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
        // The adopted blocks' hashes continue the request's chain.
        uint64_t parent = entry.hashes.empty() ? 0 : entry.hashes.back();
        for (int i = static_cast<int>(entry.hashes.size()); i < cached_prefix.num_tokens / block_size_; ++i) {
            parent = BlockHashChain::key_of(request.tokens(), block_size_, i, parent).hash();
            entry.hashes.push_back(parent);
        }
        request.num_computed_tokens = computed;
    }
    return true;
}

void KVCacheManager::commit_computed(const SchedulerRequest& request) {
    auto it = entries_.find(&request);
    if (it == entries_.end()) return;
    Entry& entry = it->second;
    if (prefix_caching_) {
        const int full = request.num_computed_tokens / block_size_;
        uint64_t parent = entry.hashes.empty() ? 0 : entry.hashes.back();
        for (int i = static_cast<int>(entry.hashes.size()); i < full; ++i) {
            BlockKey key = BlockHashChain::key_of(request.tokens(), block_size_, i, parent);
            parent = key.hash();
            for (int g = 0; g < num_groups(); ++g) {
                const int32_t block = entry.tables[g][i];
                if (block == kNullBlock) continue;
                if (g + 1 < num_groups()) groups_[g].pool().cache(block, key, parent);
                else groups_[g].pool().cache(block, std::move(key), parent);
            }
            entry.hashes.push_back(parent);
        }
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

const std::vector<int32_t>& KVCacheManager::block_table(const SchedulerRequest& request, int group) const {
    auto it = entries_.find(&request);
    if (it == entries_.end()) throw_runtime("internal error: a scheduled request has no KV blocks");
    return it->second.tables[group];
}

}  // namespace vllm
