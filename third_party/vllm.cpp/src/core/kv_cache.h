// Paged KV storage: every layer keeps K and V in `num_blocks` blocks of
// `block_size` token slots. A sequence owns a block table (block ids in
// position order); token position p lives in block table[p / block_size],
// slot p % block_size. Which blocks are free is block_pool's business.
//
// Layouts per layer:
//   V  [num_blocks][block_size][n_kv_heads][head_dim]   a slot's values are one row
//   K  [num_blocks][n_kv_heads][head_dim][block_size]   slot-minor: the attention
//      kernel scores 16 keys at once with one vector per dimension, which
//      this layout gives it as plain loads (no transpose per visit).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace vllm {

class KVCache {
public:
    KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks);

    int block_size() const { return block_size_; }
    int num_blocks() const { return num_blocks_; }

    // Stores a token's K (n_kv_heads * head_dim floats, head-major) at (layer, block, slot).
    void store_key(int layer, int32_t block, int slot, const float* key);
    // [n_kv_heads * head_dim] floats for (layer, block, slot).
    float* value(int layer, int32_t block, int slot) {
        return values_.get() + size_t(layer) * layer_stride() + (size_t(block) * block_size_ + slot) * token_stride_;
    }

    // Base of a layer's K (or V) blocks, in the layouts above.
    const float* layer_keys(int layer) const { return keys_.get() + size_t(layer) * layer_stride(); }
    const float* layer_values(int layer) const { return values_.get() + size_t(layer) * layer_stride(); }

    // Bytes of K and V storage for all blocks (reserved, touched as used).
    size_t total_bytes() const { return 2 * size_t(n_layers_) * layer_stride() * sizeof(float); }

    // Bytes one token takes across all layers (K and V), for sizing.
    static size_t bytes_per_token(int n_layers, int n_kv_heads, int head_dim);

private:
    size_t layer_stride() const { return size_t(num_blocks_) * block_size_ * token_stride_; }
    int n_layers_;
    int n_kv_heads_;
    int head_dim_;
    int block_size_;
    int num_blocks_;
    size_t token_stride_;
    // Left uninitialised: pages are only touched (and committed) as blocks
    // are written, so an auto-sized cache costs what is used.
    std::unique_ptr<float[]> keys_;
    std::unique_ptr<float[]> values_;
};

}  // namespace vllm
