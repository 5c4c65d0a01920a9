#include "core/kv_cache.h"

#include <cstdlib>
#include <cstring>

#include "dtype/half.h"
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

KVCache::KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int n_kv_heads,
                 int head_dim, int block_size, KvDtype dtype)
    : block_size_(block_size), dtype_(dtype), token_stride_(size_t(n_kv_heads) * head_dim) {
    size_t n_layers = 0;
    for (const KVCacheGroupSpec& g : groups) n_layers += g.layers.size();
    layers_.resize(n_layers);
    std::vector<size_t> layer_bytes;  // of one layer's K, per group
    for (size_t g = 0; g < groups.size(); ++g) {
        layer_bytes.push_back(size_t(group_blocks[g]) * block_size * token_stride_ * element_bytes(dtype));
        for (int layer : groups[g].layers) layers_[layer].group = static_cast<int>(g);
        group_bytes_.push_back(2 * layer_bytes[g] * groups[g].layers.size());
    }
    for (Layer& layer : layers_) {
        layer.offset = layer_bytes_total_;
        layer_bytes_total_ += layer_bytes[layer.group];
    }
    keys_.reset(new unsigned char[layer_bytes_total_]);
    values_.reset(new unsigned char[layer_bytes_total_]);
}

void KVCache::store_key(int layer, int32_t block, int slot, const float* key) {
    // (head, dim) rows of block_size slots
    const size_t first = size_t(block) * block_size_ * token_stride_ + slot;
    unsigned char* base = keys_.get() + layers_[layer].offset;
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
    unsigned char* base = values_.get() + layers_[layer].offset;
    if (dtype_ == KvDtype::F16) {
        uint16_t* dst = reinterpret_cast<uint16_t*>(base) + first;
        for (size_t i = 0; i < token_stride_; ++i) dst[i] = float_to_half(value[i]);
    } else {
        std::memcpy(reinterpret_cast<float*>(base) + first, value, token_stride_ * sizeof(float));
    }
}

size_t KVCache::bytes_per_layer_token(int n_kv_heads, int head_dim, KvDtype dtype) {
    return size_t(2) * n_kv_heads * head_dim * element_bytes(dtype);
}

}  // namespace vllm
