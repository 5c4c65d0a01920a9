#include "core/kv_cache_manager.h"

#include "util/error.h"

namespace vllm {

KVCacheManager::KVCacheManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching), pool_(num_blocks) {}

BlockKey KVCacheManager::key_of(const Request& request, int block_index, uint64_t parent_hash) const {
    BlockKey key;
    key.parent_hash = parent_hash;
    const auto first = request.tokens.begin() + int64_t(block_index) * block_size_;
    key.tokens.assign(first, first + block_size_);
    return key;
}

std::vector<int32_t> KVCacheManager::find_cached_prefix(const Request& request) const {
    std::vector<int32_t> found;
    if (!prefix_caching_) return found;
    const int max_blocks = (request.num_tokens() - 1) / block_size_;
    uint64_t parent = 0;
    for (int i = 0; i < max_blocks; ++i) {
        BlockKey key = key_of(request, i, parent);
        const uint64_t hash = key.hash();
        const int32_t block = pool_.find_cached(key, hash);
        if (block < 0) break;
        found.push_back(block);
        parent = hash;
    }
    return found;
}

bool KVCacheManager::allocate(Request& request, int num_new_tokens, const std::vector<int32_t>& cached_prefix) {
    Entry& entry = entries_[&request];
    const int have = static_cast<int>(entry.blocks.size()) + static_cast<int>(cached_prefix.size());
    const int computed = request.num_computed_tokens + static_cast<int>(cached_prefix.size()) * block_size_;
    const int need = (computed + num_new_tokens + block_size_ - 1) / block_size_ - have;
    // Adopting a cached block that sits in the free queue uses up a free block too.
    int adopt_from_free = 0;
    for (int32_t b : cached_prefix) adopt_from_free += pool_.is_free(b) ? 1 : 0;
    if (need + adopt_from_free > pool_.num_free()) {
        if (entry.blocks.empty()) entries_.erase(&request);
        return false;
    }
    for (int32_t b : cached_prefix) {
        pool_.touch(b);
        entry.blocks.push_back(b);
    }
    if (!cached_prefix.empty()) {
        // The adopted blocks' hashes continue the request's chain.
        uint64_t parent = entry.hashes.empty() ? 0 : entry.hashes.back();
        for (size_t i = entry.hashes.size(); i < entry.blocks.size(); ++i) {
            parent = key_of(request, static_cast<int>(i), parent).hash();
            entry.hashes.push_back(parent);
        }
        request.num_computed_tokens = computed;
    }
    for (int i = 0; i < need; ++i) entry.blocks.push_back(pool_.allocate());
    return true;
}

void KVCacheManager::cache_full_blocks(const Request& request) {
    if (!prefix_caching_) return;
    auto it = entries_.find(&request);
    if (it == entries_.end()) return;
    Entry& entry = it->second;
    const int full = request.num_computed_tokens / block_size_;
    uint64_t parent = entry.hashes.empty() ? 0 : entry.hashes.back();
    for (int i = static_cast<int>(entry.hashes.size()); i < full; ++i) {
        BlockKey key = key_of(request, i, parent);
        parent = key.hash();
        pool_.cache(entry.blocks[i], std::move(key), parent);
        entry.hashes.push_back(parent);
    }
}

void KVCacheManager::free(const Request& request) {
    auto it = entries_.find(&request);
    if (it == entries_.end()) return;
    std::vector<int32_t> tail_first(it->second.blocks.rbegin(), it->second.blocks.rend());
    pool_.release(tail_first);
    entries_.erase(it);
}

const std::vector<int32_t>& KVCacheManager::block_table(const Request& request) const {
    auto it = entries_.find(&request);
    if (it == entries_.end()) throw_runtime("internal error: a scheduled request has no KV blocks");
    return it->second.blocks;
}

}  // namespace vllm
