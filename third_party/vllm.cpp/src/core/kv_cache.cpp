#include "core/kv_cache.h"

namespace vllm {

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks)
    : n_layers_(n_layers),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      block_size_(block_size),
      num_blocks_(num_blocks),
      token_stride_(size_t(n_kv_heads) * head_dim),
      keys_(new float[size_t(n_layers) * num_blocks * block_size * token_stride_]),
      values_(new float[size_t(n_layers) * num_blocks * block_size * token_stride_]) {}

void KVCache::store_key(int layer, int32_t block, int slot, const float* key) {
    float* dst = keys_.get() + size_t(layer) * layer_stride() + size_t(block) * block_size_ * token_stride_ + slot;
    for (size_t i = 0; i < token_stride_; ++i) dst[i * block_size_] = key[i];  // (head, dim) rows of block_size slots
}

size_t KVCache::bytes_per_token(int n_layers, int n_kv_heads, int head_dim) {
    return size_t(2) * n_layers * n_kv_heads * head_dim * sizeof(float);
}

}  // namespace vllm
