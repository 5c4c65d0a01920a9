// Paged KV storage: every layer keeps K and V in blocks of `block_size`
// token slots, as many as its KV cache group's pool has (kv_cache_group.h:
// a sliding-window group needs far fewer than a full-attention one). A
// sequence owns a block table per group (block ids in position order);
// token position p of a layer lives in block table[p / block_size] of the
// layer's group, slot p % block_size. Which blocks are free is
// block_pool's business.
//
// Element type (KvDtype): IEEE half precision (16-bit patterns, dtype/half.h;
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
#include <vector>

#include "core/kv_cache_group.h"

namespace vllm {

enum class KvDtype { F32, F16 };

// The element type VLLM_CPP_KV_CACHE_DTYPE names ("f32" or "f16"), else
// kDefaultKvDtype; any other value is INVALID_ARGUMENT (at engine load).
constexpr KvDtype kDefaultKvDtype = KvDtype::F16;
KvDtype kv_dtype_from_env();

class KVCache {
public:
    // group_blocks[g]: blocks per layer of group g.
    KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int n_kv_heads,
            int head_dim, int block_size, KvDtype dtype = kDefaultKvDtype);

    int block_size() const { return block_size_; }
    KvDtype dtype() const { return dtype_; }
    // The KV cache group whose block table a layer reads.
    int group_of(int layer) const { return layers_[layer].group; }

    // Store a token's K or V (n_kv_heads * head_dim floats, head-major) at
    // (layer, block, slot), rounded to half for KvDtype::F16.
    void store_key(int layer, int32_t block, int slot, const float* key);
    void store_value(int layer, int32_t block, int slot, const float* value);

    // Base of a layer's K (or V) blocks, in the layouts above.
    // Elements are floats or halves (uint16_t), per dtype().
    const void* layer_keys(int layer) const { return keys_.get() + layers_[layer].offset; }
    const void* layer_values(int layer) const { return values_.get() + layers_[layer].offset; }

    // One block of a layer: its K (or V) as one contiguous run of
    // layer_block_bytes() bytes in the layouts above (what KV transfer
    // copies out and back in).
    size_t layer_block_bytes() const { return size_t(block_size_) * token_stride_ * element_bytes(dtype_); }
    unsigned char* key_block(int layer, int32_t block) {
        return keys_.get() + layers_[layer].offset + size_t(block) * layer_block_bytes();
    }
    unsigned char* value_block(int layer, int32_t block) {
        return values_.get() + layers_[layer].offset + size_t(block) * layer_block_bytes();
    }
    const unsigned char* key_block(int layer, int32_t block) const {
        return const_cast<KVCache*>(this)->key_block(layer, block);
    }
    const unsigned char* value_block(int layer, int32_t block) const {
        return const_cast<KVCache*>(this)->value_block(layer, block);
    }
    int num_layers() const { return static_cast<int>(layers_.size()); }

    // Bytes of K and V storage for all blocks (reserved, touched as used),
    // and for one group's layers.
    size_t total_bytes() const { return 2 * layer_bytes_total_; }
    size_t group_bytes(int group) const { return group_bytes_[group]; }

    static size_t element_bytes(KvDtype dtype) { return dtype == KvDtype::F16 ? 2 : 4; }
    // Bytes one token takes in one layer (K and V), for sizing.
    static size_t bytes_per_layer_token(int n_kv_heads, int head_dim, KvDtype dtype);

private:
    struct Layer {
        int group = 0;
        size_t offset = 0;  // bytes from the start of keys_ (and of values_)
    };
    int block_size_;
    KvDtype dtype_;
    size_t token_stride_;  // elements
    std::vector<Layer> layers_;
    std::vector<size_t> group_bytes_;
    size_t layer_bytes_total_ = 0;  // of K (V is as large)
    // Left uninitialised: pages are only touched (and committed) as blocks
    // are written, so an auto-sized cache costs what is used.
    std::unique_ptr<unsigned char[]> keys_;
    std::unique_ptr<unsigned char[]> values_;
};

}  // namespace vllm
