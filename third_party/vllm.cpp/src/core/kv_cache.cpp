#include "core/kv_cache.h"

#include <cstdlib>
#include <cstring>

#include "core/half.h"
#include "util/error.h"

namespace vllm {

KvDtype kv_dtype_from_env() {
    if (const char* env = std::getenv("VLLM_CPP_KV_CACHE_DTYPE")) {
        if (std::strcmp(env, "f16") == 0) return KvDtype::F16;
        if (std::strcmp(env, "f32") == 0) return KvDtype::F32;
        throw_invalid_argument("VLLM_CPP_KV_CACHE_DTYPE must be 'f32' or 'f16' (got '" + std::string(env) + "')");
    }
    return kDefaultKvDtype;
}

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks, KvDtype dtype)
    : n_layers_(n_layers),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      block_size_(block_size),
      num_blocks_(num_blocks),
      dtype_(dtype),
      token_stride_(size_t(n_kv_heads) * head_dim),
      keys_(new unsigned char[size_t(n_layers) * layer_stride()]),
      values_(new unsigned char[size_t(n_layers) * layer_stride()]) {}

void KVCache::store_key(int layer, int32_t block, int slot, const float* key) {
    // (head, dim) rows of block_size slots
    const size_t first = size_t(block) * block_size_ * token_stride_ + slot;
    unsigned char* base = keys_.get() + size_t(layer) * layer_stride();
    if (dtype_ == KvDtype::F16) {
        uint16_t* dst = reinterpret_cast<uint16_t*>(base) + first;
        for (size_t i = 0; i < token_stride_; ++i) dst[i * block_size_] = float_to_half(key[i]);
    } else {
        float* dst = reinterpret_cast<float*>(base) + first;
        for (size_t i = 0; i < token_stride_; ++i) dst[i * block_size_] = key[i];
    }
}

void KVCache::store_value(int layer, int32_t block, int slot, const float* value) {
    const size_t first = (size_t(block) * block_size_ + slot) * token_stride_;
    unsigned char* base = values_.get() + size_t(layer) * layer_stride();
    if (dtype_ == KvDtype::F16) {
        uint16_t* dst = reinterpret_cast<uint16_t*>(base) + first;
        for (size_t i = 0; i < token_stride_; ++i) dst[i] = float_to_half(value[i]);
    } else {
        std::memcpy(reinterpret_cast<float*>(base) + first, value, token_stride_ * sizeof(float));
    }
}

size_t KVCache::bytes_per_token(int n_layers, int n_kv_heads, int head_dim, KvDtype dtype) {
    return size_t(2) * n_layers * n_kv_heads * head_dim * element_bytes(dtype);
}

}  // namespace vllm
