#include "core/kv_cache.h"

namespace vllm {

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks)
    : n_layers_(n_layers),
      block_size_(block_size),
      num_blocks_(num_blocks),
      token_stride_(size_t(n_kv_heads) * head_dim),
      keys_(new float[size_t(n_layers) * num_blocks * block_size * token_stride_]),
      values_(new float[size_t(n_layers) * num_blocks * block_size * token_stride_]) {}

size_t KVCache::bytes_per_token(int n_layers, int n_kv_heads, int head_dim) {
    return size_t(2) * n_layers * n_kv_heads * head_dim * sizeof(float);
}

}  // namespace vllm
