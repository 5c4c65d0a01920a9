#include "kv_cache/kv_cache.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "dtype/half.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr float kI8Max = 127.0f;
constexpr float kLargestHalf = 65504.0f;

// One row of n values (x[i]) as int8 q[i * stride] with its half scale
// (dtype/kv_dtype.h: symmetric, q in [-127, 127], rounded to nearest even
// against the scale as stored).
uint16_t quantize_row_i8(const float* x, int n, int8_t* q, size_t stride) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const uint16_t scale = float_to_half(std::fmin(amax / kI8Max, kLargestHalf));
    const float s = half_to_float(scale);
    for (int i = 0; i < n; ++i) {
        // fmin/fmax also map a NaN to a bound: q is always a valid int8.
        const float v = s > 0.0f ? std::fmin(std::fmax(x[i] / s, -kI8Max), kI8Max) : 0.0f;
        q[i * stride] = static_cast<int8_t>(std::lrint(v));
    }
    return scale;
}

}  // namespace

KvDtype kv_dtype_from_env() {
    if (const char* env = std::getenv("VLLM_CPP_KV_CACHE_DTYPE")) {
        if (std::strcmp(env, "f16") == 0) return KvDtype::F16;
        if (std::strcmp(env, "f32") == 0) return KvDtype::F32;
        if (std::strcmp(env, "i8") == 0) return KvDtype::I8;
        throw_invalid_argument("VLLM_CPP_KV_CACHE_DTYPE must be 'f32', 'f16' or 'i8' (got '" + std::string(env) +
                               "')");
    }
    return kDefaultKvDtype;
}

KVCache::KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int n_kv_heads,
                 int head_dim, int block_size, KvDtype dtype)
    : block_size_(block_size),
      dtype_(dtype),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      token_stride_(size_t(n_kv_heads) * head_dim) {
    size_t n_layers = 0;
    for (const KVCacheGroupSpec& g : groups) n_layers += g.layers.size();
    layers_.resize(n_layers);
    std::vector<size_t> layer_bytes;  // of one layer's K, per group
    for (size_t g = 0; g < groups.size(); ++g) {
        layer_bytes.push_back(size_t(group_blocks[g]) * layer_block_bytes());
        for (int layer : groups[g].layers) layers_[layer].group = static_cast<int>(g);
        group_bytes_.push_back(2 * layer_bytes[g] * groups[g].layers.size());
    }
    for (Layer& layer : layers_) {
        layer.offset = layer_bytes_total_;
        layer_bytes_total_ += layer_bytes[layer.group];
    }
    keys_.reset(static_cast<unsigned char*>(::operator new[](layer_bytes_total_, kAlignment)));
    values_.reset(static_cast<unsigned char*>(::operator new[](layer_bytes_total_, kAlignment)));
}

// K: (head, dim) rows of block_size slots, then the I8 scales [head][slot].
unsigned char* KVCache::key_slot(int layer, int32_t block, int slot) const {
    return block_of(keys_.get(), layer, block) + size_t(slot) * kv_element_bytes(dtype_);
}
uint16_t* KVCache::key_scales(int layer, int32_t block, int slot) const {
    return scales_of(keys_.get(), layer, block, slot);
}
// V: (head, slot) rows of head_dim, then the I8 scales [head][slot].
unsigned char* KVCache::value_slot(int layer, int32_t block, int slot) const {
    return block_of(values_.get(), layer, block) + size_t(slot) * head_dim_ * kv_element_bytes(dtype_);
}
uint16_t* KVCache::value_scales(int layer, int32_t block, int slot) const {
    return scales_of(values_.get(), layer, block, slot);
}

void KVCache::store_key(int layer, int32_t block, int slot, const float* key) {
    unsigned char* dst = key_slot(layer, block, slot);
    switch (dtype_) {
        case KvDtype::F32:
            for (size_t i = 0; i < token_stride_; ++i) reinterpret_cast<float*>(dst)[i * block_size_] = key[i];
            break;
        case KvDtype::F16:
            for (size_t i = 0; i < token_stride_; ++i)
                reinterpret_cast<uint16_t*>(dst)[i * block_size_] = float_to_half(key[i]);
            break;
        case KvDtype::I8: {
            uint16_t* scales = key_scales(layer, block, slot);
            for (int h = 0; h < n_kv_heads_; ++h)
                scales[size_t(h) * block_size_] =
                    quantize_row_i8(key + size_t(h) * head_dim_, head_dim_,
                                    reinterpret_cast<int8_t*>(dst) + size_t(h) * head_dim_ * block_size_, block_size_);
            break;
        }
    }
}

void KVCache::store_value(int layer, int32_t block, int slot, const float* value) {
    unsigned char* dst = value_slot(layer, block, slot);
    const size_t head_stride = size_t(block_size_) * head_dim_;  // elements from one head's row to the next's
    for (int h = 0; h < n_kv_heads_; ++h) {
        const float* src = value + size_t(h) * head_dim_;
        switch (dtype_) {
            case KvDtype::F32:
                std::memcpy(reinterpret_cast<float*>(dst) + h * head_stride, src, head_dim_ * sizeof(float));
                break;
            case KvDtype::F16: {
                uint16_t* row = reinterpret_cast<uint16_t*>(dst) + h * head_stride;
                for (int i = 0; i < head_dim_; ++i) row[i] = float_to_half(src[i]);
                break;
            }
            case KvDtype::I8:
                value_scales(layer, block, slot)[size_t(h) * block_size_] =
                    quantize_row_i8(src, head_dim_, reinterpret_cast<int8_t*>(dst) + h * head_stride, 1);
                break;
        }
    }
}

namespace {
// Element i of a row of the cache's type (stride in elements), decoded.
float decode(KvDtype dtype, const unsigned char* row, size_t i, float i8_scale) {
    switch (dtype) {
        case KvDtype::F32: return reinterpret_cast<const float*>(row)[i];
        case KvDtype::F16: return half_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
        case KvDtype::I8: return reinterpret_cast<const int8_t*>(row)[i] * i8_scale;
    }
    return 0.0f;
}
}  // namespace

void KVCache::read_key(int layer, int32_t block, int slot, float* key) const {
    const unsigned char* src = key_slot(layer, block, slot);
    for (size_t i = 0; i < token_stride_; ++i) {
        const float scale =
            dtype_ == KvDtype::I8 ? half_to_float(key_scales(layer, block, slot)[(i / head_dim_) * block_size_]) : 0.0f;
        key[i] = decode(dtype_, src, i * block_size_, scale);
    }
}

void KVCache::read_value(int layer, int32_t block, int slot, float* value) const {
    const unsigned char* src = value_slot(layer, block, slot);
    for (size_t i = 0; i < token_stride_; ++i) {
        const size_t h = i / head_dim_;
        const float scale =
            dtype_ == KvDtype::I8 ? half_to_float(value_scales(layer, block, slot)[h * block_size_]) : 0.0f;
        value[i] = decode(dtype_, src, h * block_size_ * head_dim_ + i % head_dim_, scale);
    }
}

}  // namespace vllm
