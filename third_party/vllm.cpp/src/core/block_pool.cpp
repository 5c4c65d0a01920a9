#include "core/block_pool.h"

#include <cstring>

#include "util/error.h"

namespace vllm {

BlockPool::BlockPool(int num_blocks, int block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      ref_count_(num_blocks, 0),
      prev_(num_blocks, -1),
      next_(num_blocks, -1),
      in_free_queue_(num_blocks, false),
      hash_(num_blocks, 0),
      parent_hash_(num_blocks, 0),
      tokens_(size_t(num_blocks) * block_size, 0),
      has_key_(num_blocks, false) {
    for (int32_t b = 0; b < num_blocks; ++b) push_back_free(b);
}

void BlockPool::push_back_free(int32_t b) {
    prev_[b] = tail_;
    next_[b] = -1;
    if (tail_ >= 0) next_[tail_] = b; else head_ = b;
    tail_ = b;
    in_free_queue_[b] = true;
    ++num_free_;
}

void BlockPool::unlink(int32_t b) {
    if (prev_[b] >= 0) next_[prev_[b]] = next_[b]; else head_ = next_[b];
    if (next_[b] >= 0) prev_[next_[b]] = prev_[b]; else tail_ = prev_[b];
    prev_[b] = next_[b] = -1;
    in_free_queue_[b] = false;
    --num_free_;
}

void BlockPool::evict(int32_t b) {
    if (!has_key_[b]) return;
    auto range = cached_.equal_range(hash_[b]);
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == b) {
            cached_.erase(it);
            break;
        }
    has_key_[b] = false;
    if (events_) events_->push_back({KvCacheEvent::Kind::Removed, event_group_, hash_[b], 0, {}});
}

int32_t BlockPool::allocate() {
    if (head_ < 0) return -1;
    const int32_t b = head_;
    unlink(b);
    evict(b);
    ref_count_[b] = 1;
    return b;
}

void BlockPool::touch(int32_t b) {
    if (ref_count_[b]++ == 0 && in_free_queue_[b]) unlink(b);
}

void BlockPool::release(const std::vector<int32_t>& blocks) {
    for (int32_t b : blocks) {
        if (ref_count_[b] <= 0) throw_runtime("KV block " + std::to_string(b) + " released more often than referenced");
        if (--ref_count_[b] == 0) push_back_free(b);
    }
}

bool BlockPool::holds(int32_t b, const BlockKey& key) const {
    return parent_hash_[b] == key.parent_hash &&
           std::memcmp(&tokens_[size_t(b) * block_size_], key.tokens, sizeof(int32_t) * block_size_) == 0;
}

int32_t BlockPool::find_cached(const BlockKey& key) const {
    auto range = cached_.equal_range(key.hash);
    for (auto it = range.first; it != range.second; ++it)
        if (holds(it->second, key)) return it->second;
    return -1;
}

void BlockPool::cache(int32_t block, const BlockKey& key) {
    if (has_key_[block] || find_cached(key) >= 0) return;
    hash_[block] = key.hash;
    parent_hash_[block] = key.parent_hash;
    std::memcpy(&tokens_[size_t(block) * block_size_], key.tokens, sizeof(int32_t) * block_size_);
    has_key_[block] = true;
    cached_.emplace(key.hash, block);
    if (events_)
        events_->push_back({KvCacheEvent::Kind::Stored, event_group_, key.hash, key.parent_hash,
                            std::vector<int32_t>(key.tokens, key.tokens + block_size_)});
}

}  // namespace vllm
