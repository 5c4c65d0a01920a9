// Paged KV storage: every layer keeps K and V in `num_blocks` blocks of
// `block_size` token slots. A sequence owns a block table (block ids in
// position order); token position p lives in block table[p / block_size],
// slot p % block_size. Which blocks are free is block_pool's business.
//
// Element type (KvDtype): IEEE half precision (16-bit patterns, core/half.h;
// the default, as in llama.cpp) rounded to nearest even once when stored,
// or float32 (VLLM_CPP_KV_CACHE_DTYPE=f32, e.g. for tests that compare
// logits with a float reference at 1e-3). Attention reads the whole cache
// of a sequence every decode step, so half the bytes is half that traffic;
// the price is K/V rounded to 11 significant bits. The rounding happens
// here only, in portable code, so a stored token's values are the same
// whatever batch or kernel build computed them.
//
// Layouts per layer (elements of the cache's type):
//   V  [num_blocks][block_size][n_kv_heads][head_dim]   a slot's values are one row
//   K  [num_blocks][n_kv_heads][head_dim][block_size]   slot-minor: the attention
//      kernel scores 16 keys at once with one vector per dimension, which
//      this layout gives it as plain loads (no transpose per visit).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace vllm {

enum class KvDtype { F32, F16 };

// The element type VLLM_CPP_KV_CACHE_DTYPE names ("f32" or "f16"), else
// kDefaultKvDtype; any other value is INVALID_ARGUMENT (at engine load).
constexpr KvDtype kDefaultKvDtype = KvDtype::F16;
KvDtype kv_dtype_from_env();

class KVCache {
public:
    KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks,
            KvDtype dtype = kDefaultKvDtype);

    int block_size() const { return block_size_; }
    int num_blocks() const { return num_blocks_; }
    KvDtype dtype() const { return dtype_; }

    // Store a token's K or V (n_kv_heads * head_dim floats, head-major) at
    // (layer, block, slot), rounded to half for KvDtype::F16.
    void store_key(int layer, int32_t block, int slot, const float* key);
    void store_value(int layer, int32_t block, int slot, const float* value);

    // Base of a layer's K (or V) blocks, in the layouts above.
    // Elements are floats or halves (uint16_t), per dtype().
    const void* layer_keys(int layer) const { return keys_.get() + size_t(layer) * layer_stride(); }
    const void* layer_values(int layer) const { return values_.get() + size_t(layer) * layer_stride(); }

    // Bytes of K and V storage for all blocks (reserved, touched as used).
    size_t total_bytes() const { return 2 * size_t(n_layers_) * layer_stride(); }

    static size_t element_bytes(KvDtype dtype) { return dtype == KvDtype::F16 ? 2 : 4; }
    // Bytes one token takes across all layers (K and V), for sizing.
    static size_t bytes_per_token(int n_layers, int n_kv_heads, int head_dim, KvDtype dtype);

private:
    // In bytes.
    size_t layer_stride() const { return size_t(num_blocks_) * block_size_ * token_stride_ * element_bytes(dtype_); }
    int n_layers_;
    int n_kv_heads_;
    int head_dim_;
    int block_size_;
    int num_blocks_;
    KvDtype dtype_;
    size_t token_stride_;  // elements
    // Left uninitialised: pages are only touched (and committed) as blocks
    // are written, so an auto-sized cache costs what is used.
    std::unique_ptr<unsigned char[]> keys_;
    std::unique_ptr<unsigned char[]> values_;
};

}  // namespace vllm
