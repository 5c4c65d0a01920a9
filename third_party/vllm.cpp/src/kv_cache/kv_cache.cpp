#include "kv_cache/kv_cache.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

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

KVCache::KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks,
                 std::vector<KvLayerShape> layer_shapes, int block_size, KvDtype dtype)
    : block_size_(block_size), dtype_(dtype) {
    layers_.resize(layer_shapes.size());
    group_bytes_.assign(groups.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g)
        for (int layer : groups[g].layers) {
            if (layer < 0 || layer >= static_cast<int>(layer_shapes.size()))
                throw_invalid_argument("KV cache group " + std::to_string(g) + " names layer " +
                                       std::to_string(layer) + " of " + std::to_string(layer_shapes.size()));
            layers_[layer].group = static_cast<int>(g);
        }
    for (size_t l = 0; l < layers_.size(); ++l) {
        Layer& layer = layers_[l];
        layer.shape = layer_shapes[l];
        layer.key_block_bytes = size_t(block_size) * layer.shape.key_token_bytes(dtype);
        layer.value_block_bytes = size_t(block_size) * layer.shape.value_token_bytes(dtype);
        const size_t blocks = size_t(group_blocks[layer.group]);
        layer.key_offset = key_bytes_total_;
        layer.value_offset = value_bytes_total_;
        key_bytes_total_ += blocks * layer.key_block_bytes;
        value_bytes_total_ += blocks * layer.value_block_bytes;
        group_bytes_[layer.group] += blocks * (layer.key_block_bytes + layer.value_block_bytes);
    }
    // operator new of 0 bytes still gives a unique pointer to free.
    keys_.reset(static_cast<unsigned char*>(::operator new[](key_bytes_total_, kAlignment)));
    values_.reset(static_cast<unsigned char*>(::operator new[](value_bytes_total_, kAlignment)));
}

KVCache::KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int n_kv_heads,
                 int head_dim, int block_size, KvDtype dtype)
    : KVCache(groups, group_blocks, uniform_layer_shapes(groups, n_kv_heads, head_dim), block_size, dtype) {}

std::vector<KvLayerShape> KVCache::uniform_layer_shapes(const std::vector<KVCacheGroupSpec>& groups, int n_kv_heads,
                                                        int head_dim) {
    size_t n_layers = 0;
    for (const KVCacheGroupSpec& g : groups) n_layers += g.layers.size();
    return std::vector<KvLayerShape>(n_layers, KvLayerShape{n_kv_heads, head_dim, head_dim});
}

// K: (head, dim) rows of block_size slots, then the I8 scales [head][slot].
unsigned char* KVCache::key_slot(int layer, int32_t block, int slot) const {
    return const_cast<KVCache*>(this)->key_block(layer, block) + size_t(slot) * kv_element_bytes(dtype_);
}
uint16_t* KVCache::key_scales(int layer, int32_t block, int slot) const {
    const KvLayerShape& s = layers_[layer].shape;
    return scales_of(const_cast<KVCache*>(this)->key_block(layer, block),
                     size_t(block_size_) * s.n_kv_heads * s.k_head_dim, slot);
}
// V: (head, slot) rows of head_dim, then the I8 scales [head][slot].
unsigned char* KVCache::value_slot(int layer, int32_t block, int slot) const {
    return const_cast<KVCache*>(this)->value_block(layer, block) +
           size_t(slot) * layers_[layer].shape.v_head_dim * kv_element_bytes(dtype_);
}
uint16_t* KVCache::value_scales(int layer, int32_t block, int slot) const {
    const KvLayerShape& s = layers_[layer].shape;
    return scales_of(const_cast<KVCache*>(this)->value_block(layer, block),
                     size_t(block_size_) * s.n_kv_heads * s.v_head_dim, slot);
}

void KVCache::store_key(int layer, int32_t block, int slot, const float* key) {
    const int heads = layers_[layer].shape.n_kv_heads, head_dim = layers_[layer].shape.k_head_dim;
    const size_t n = size_t(heads) * head_dim;
    unsigned char* dst = key_slot(layer, block, slot);
    switch (dtype_) {
        case KvDtype::F32:
            for (size_t i = 0; i < n; ++i) reinterpret_cast<float*>(dst)[i * block_size_] = key[i];
            break;
        case KvDtype::F16:
            for (size_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(dst)[i * block_size_] = float_to_half(key[i]);
            break;
        case KvDtype::I8: {
            uint16_t* scales = key_scales(layer, block, slot);
            for (int h = 0; h < heads; ++h)
                scales[size_t(h) * block_size_] =
                    quantize_row_i8(key + size_t(h) * head_dim, head_dim,
                                    reinterpret_cast<int8_t*>(dst) + size_t(h) * head_dim * block_size_, block_size_);
            break;
        }
    }
}

void KVCache::store_value(int layer, int32_t block, int slot, const float* value) {
    const int heads = layers_[layer].shape.n_kv_heads, head_dim = layers_[layer].shape.v_head_dim;
    unsigned char* dst = value_slot(layer, block, slot);
    const size_t head_stride = size_t(block_size_) * head_dim;  // elements from one head's row to the next's
    for (int h = 0; h < heads; ++h) {
        const float* src = value + size_t(h) * head_dim;
        switch (dtype_) {
            case KvDtype::F32:
                std::memcpy(reinterpret_cast<float*>(dst) + h * head_stride, src, head_dim * sizeof(float));
                break;
            case KvDtype::F16: {
                uint16_t* row = reinterpret_cast<uint16_t*>(dst) + h * head_stride;
                for (int i = 0; i < head_dim; ++i) row[i] = float_to_half(src[i]);
                break;
            }
            case KvDtype::I8:
                value_scales(layer, block, slot)[size_t(h) * block_size_] =
                    quantize_row_i8(src, head_dim, reinterpret_cast<int8_t*>(dst) + h * head_stride, 1);
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
    const int head_dim = layers_[layer].shape.k_head_dim;
    const size_t n = size_t(layers_[layer].shape.n_kv_heads) * head_dim;
    const unsigned char* src = key_slot(layer, block, slot);
    for (size_t i = 0; i < n; ++i) {
        const float scale =
            dtype_ == KvDtype::I8 ? half_to_float(key_scales(layer, block, slot)[(i / head_dim) * block_size_]) : 0.0f;
        key[i] = decode(dtype_, src, i * block_size_, scale);
    }
}

void KVCache::read_value(int layer, int32_t block, int slot, float* value) const {
    const int head_dim = layers_[layer].shape.v_head_dim;
    const size_t n = size_t(layers_[layer].shape.n_kv_heads) * head_dim;
    const unsigned char* src = value_slot(layer, block, slot);
    for (size_t i = 0; i < n; ++i) {
        const size_t h = i / head_dim;
        const float scale =
            dtype_ == KvDtype::I8 ? half_to_float(value_scales(layer, block, slot)[h * block_size_]) : 0.0f;
        value[i] = decode(dtype_, src, h * block_size_ * head_dim + i % head_dim, scale);
    }
}

}  // namespace vllm
