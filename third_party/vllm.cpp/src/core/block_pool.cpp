#include "core/block_pool.h"

#include "util/error.h"

namespace vllm {

uint64_t BlockKey::hash() const {
    // FNV-1a over the parent hash and the token ids, then a final mix; the
    // key itself is compared on lookup, so collisions cost time, not output.
    uint64_t h = 1469598103934665603ull ^ parent_hash;
    auto mix = [&h](uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xFF;
            h *= 1099511628211ull;
        }
    };
    mix(parent_hash);
    for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

BlockPool::BlockPool(int num_blocks)
    : num_blocks_(num_blocks),
      ref_count_(num_blocks, 0),
      prev_(num_blocks, -1),
      next_(num_blocks, -1),
      in_free_queue_(num_blocks, false),
      key_(num_blocks),
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
    auto range = cached_.equal_range(key_[b].hash());
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == b) {
            cached_.erase(it);
            break;
        }
    key_[b] = BlockKey();
    has_key_[b] = false;
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

int32_t BlockPool::find_cached(const BlockKey& key, uint64_t hash) const {
    auto range = cached_.equal_range(hash);
    for (auto it = range.first; it != range.second; ++it)
        if (key_[it->second] == key) return it->second;
    return -1;
}

void BlockPool::cache(int32_t block, BlockKey key, uint64_t hash) {
    if (has_key_[block] || find_cached(key, hash) >= 0) return;
    key_[block] = std::move(key);
    has_key_[block] = true;
    cached_.emplace(hash, block);
}

}  // namespace vllm
