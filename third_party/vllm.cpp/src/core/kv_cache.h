// Paged KV storage: every layer keeps K and V in `num_blocks` blocks of
// `block_size` token slots. A sequence owns a block table (block ids in
// position order); token position p lives in block table[p / block_size],
// slot p % block_size. Which blocks are free is block_pool's business.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vllm {

class KVCache {
public:
    KVCache(int n_layers, int n_kv_heads, int head_dim, int block_size, int num_blocks);

    int block_size() const { return block_size_; }
    int num_blocks() const { return num_blocks_; }

    // [n_kv_heads * head_dim] floats for (layer, block, slot).
    float* key(int layer, int32_t block, int slot) { return base(keys_, layer, block, slot); }
    float* value(int layer, int32_t block, int slot) { return base(values_, layer, block, slot); }

    // Bytes one token takes across all layers (K and V), for sizing.
    static size_t bytes_per_token(int n_layers, int n_kv_heads, int head_dim);

private:
    float* base(std::vector<float>& store, int layer, int32_t block, int slot) {
        return store.data() + ((size_t(layer) * num_blocks_ + size_t(block)) * block_size_ + slot) * token_stride_;
    }

    int block_size_;
    int num_blocks_;
    size_t token_stride_;
    std::vector<float> keys_;
    std::vector<float> values_;
};

}  // namespace vllm
