// Paged KV storage: every layer keeps K and V in blocks of `block_size`
// token slots, in its own shape (kv_layer_shape.h: KV heads, K and V head
// sizes; a layer may keep K only, or nothing), as many as its KV cache
// group's pool has (kv_cache_group.h:
// a sliding-window group needs far fewer than a full-attention one). A
// sequence owns a block table per group (block ids in position order);
// token position p of a layer lives in block table[p / block_size] of the
// layer's group, slot p % block_size. Which blocks are free is
// block_pool's business.
//
// Element type (KvDtype, dtype/kv_dtype.h): IEEE half precision (16-bit
// patterns, dtype/half.h; the default, as in llama.cpp) rounded to nearest
// even once when stored, float32 (VLLM_CPP_KV_CACHE_DTYPE=f32, e.g. for
// tests that compare logits with a float reference at 1e-3), or int8 with a
// half scale per (token, KV head) row (kv_cache_dtype "int8"). Attention
// reads the whole cache of a sequence every decode step, so fewer bytes is
// less of that traffic and more tokens in the same memory; the price is
// K/V rounded to 11 significant bits (f16) or to 1/127 of the row's
// largest magnitude (int8). The rounding happens here only, in portable
// code, so a stored token's values are the same whatever batch or kernel
// build computed them.
//
// Layouts of one block of one layer (elements of the cache's type;
// head_dim is the layer's K or V head size):
//   K  [n_kv_heads][head_dim][block_size]   slot-minor: the attention
//      kernel scores 16 keys at once with one vector per dimension, which
//      this layout gives it as plain loads (no transpose per visit).
//   V  [n_kv_heads][block_size][head_dim]   a (head, slot)'s values are
//      one row, and a head's rows one run: attention reads one KV head at
//      a time, and a decode at 4,000 keys of context ran 10% faster than
//      with a slot's heads side by side (BENCHMARKS.md, 2026-12-05).
// So either side of a block is one run per KV head. For int8 each block's
// K and V data are followed by their scales as halves [n_kv_heads]
// [block_size]; a layer's K blocks follow each other, key_block_bytes()
// apart, and its V blocks value_block_bytes() apart. Stored KV blocks (kv_transfer) carry these bytes, so a change to
// them bumps kKvLayoutVersion, which the model fingerprint includes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "core/kv_cache_group.h"
#include "dtype/kv_dtype.h"
#include "kv_cache/kv_layer_shape.h"

namespace vllm {

// The layouts above (1: V rows [block_size][n_kv_heads][head_dim]).
constexpr uint64_t kKvLayoutVersion = 2;

// The element type VLLM_CPP_KV_CACHE_DTYPE names ("f32", "f16" or "i8"), else
// kDefaultKvDtype; any other value is INVALID_ARGUMENT (at engine load).
constexpr KvDtype kDefaultKvDtype = KvDtype::F16;
KvDtype kv_dtype_from_env();

class KVCache {
public:
    // group_blocks[g]: blocks per layer of group g; layer_shapes: one per
    // layer of the groups.
    KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks,
            std::vector<KvLayerShape> layer_shapes, int block_size, KvDtype dtype = kDefaultKvDtype);
    // Every layer {n_kv_heads, head_dim, head_dim} (uniform_layer_shapes).
    KVCache(const std::vector<KVCacheGroupSpec>& groups, const std::vector<int>& group_blocks, int n_kv_heads,
            int head_dim, int block_size, KvDtype dtype = kDefaultKvDtype);

    static std::vector<KvLayerShape> uniform_layer_shapes(const std::vector<KVCacheGroupSpec>& groups, int n_kv_heads,
                                                          int head_dim);

    int block_size() const { return block_size_; }
    KvDtype dtype() const { return dtype_; }
    // The KV cache group whose block table a layer reads.
    int group_of(int layer) const { return layers_[layer].group; }
    const KvLayerShape& shape(int layer) const { return layers_[layer].shape; }

    // Store a token's K or V (n_kv_heads * the layer's K or V head size
    // floats, head-major) at
    // (layer, block, slot), rounded to half for KvDtype::F16, quantized per
    // head for KvDtype::I8.
    void store_key(int layer, int32_t block, int slot, const float* key);
    void store_value(int layer, int32_t block, int slot, const float* value);
    // What attention reads back for that slot, as floats (the stored,
    // rounded values): the layouts' reference decoding, for tests.
    void read_key(int layer, int32_t block, int slot, float* key) const;
    void read_value(int layer, int32_t block, int slot, float* value) const;

    // Base of a layer's K (or V) blocks, in the layouts above.
    // Elements are floats, halves (uint16_t) or int8 with scales, per dtype().
    const void* layer_keys(int layer) const { return keys_.get() + layers_[layer].key_offset; }
    const void* layer_values(int layer) const { return values_.get() + layers_[layer].value_offset; }

    // One block of a layer: its K (or V) as one contiguous run of
    // key_block_bytes() (value_block_bytes()) bytes in the layouts above
    // (what KV transfer copies out and back in); 0 where it keeps none.
    size_t key_block_bytes(int layer) const { return layers_[layer].key_block_bytes; }
    size_t value_block_bytes(int layer) const { return layers_[layer].value_block_bytes; }
    static size_t layer_block_bytes(int n_kv_heads, int head_dim, int block_size, KvDtype dtype) {
        return size_t(block_size) * kv_token_bytes(n_kv_heads, head_dim, dtype);
    }
    unsigned char* key_block(int layer, int32_t block) {
        return keys_.get() + layers_[layer].key_offset + size_t(block) * layers_[layer].key_block_bytes;
    }
    unsigned char* value_block(int layer, int32_t block) {
        return values_.get() + layers_[layer].value_offset + size_t(block) * layers_[layer].value_block_bytes;
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
    size_t total_bytes() const { return key_bytes_total_ + value_bytes_total_; }
    size_t group_bytes(int group) const { return group_bytes_[group]; }


private:
    struct Layer {
        int group = 0;
        KvLayerShape shape;
        size_t key_offset = 0, value_offset = 0;  // bytes from the start of keys_ (values_)
        size_t key_block_bytes = 0, value_block_bytes = 0;
    };
    // The I8 scale of a slot's head 0 in a block of `data_bytes` of data
    // (head h's is h * block_size_ further).
    uint16_t* scales_of(unsigned char* block, size_t data_bytes, int slot) const {
        return reinterpret_cast<uint16_t*>(block + data_bytes) + slot;
    }
    // The start of a slot's K data (head 0, dimension 0) and its scales.
    unsigned char* key_slot(int layer, int32_t block, int slot) const;
    uint16_t* key_scales(int layer, int32_t block, int slot) const;
    unsigned char* value_slot(int layer, int32_t block, int slot) const;
    uint16_t* value_scales(int layer, int32_t block, int slot) const;

    int block_size_;
    KvDtype dtype_;
    std::vector<Layer> layers_;
    std::vector<size_t> group_bytes_;
    size_t key_bytes_total_ = 0, value_bytes_total_ = 0;
    // Left uninitialised: pages are only touched (and committed) as blocks
    // are written, so an auto-sized cache costs what is used. Aligned to a
    // cache line: with f16 and f32 elements every block then starts on one,
    // so no row or vector the attention kernel loads straddles two (malloc's
    // large blocks start 16 bytes into a page, which split half of them).
    static constexpr std::align_val_t kAlignment{64};
    struct AlignedDelete {
        void operator()(unsigned char* p) const { ::operator delete[](p, kAlignment); }
    };
    std::unique_ptr<unsigned char[], AlignedDelete> keys_;
    std::unique_ptr<unsigned char[], AlignedDelete> values_;
};

}  // namespace vllm
