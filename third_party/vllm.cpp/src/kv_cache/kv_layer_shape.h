// What one layer keeps per token in the KV cache: its K rows and V rows.
// Most models keep the same shape in every layer (n_kv_heads rows of
// head_dim for K and for V), but not all do: Gemma 4's sliding and full
// layers differ in head size and its KV-sharing layers keep nothing (they
// read an earlier layer's); multi-head latent attention keeps one latent
// row as K and no V (V is read back from the latent); the linear-attention
// layers of hybrid models keep no per-token K/V at all (their state is per
// request). ModelConfig::kv_shape() gives a layer's shape; the cache, its
// budget (engine/kv_cache_plan) and KV transfer all size from it.
#pragma once
#include <cstddef>

#include "dtype/kv_dtype.h"

namespace vllm {

struct KvLayerShape {
    int n_kv_heads = 0;  // 0: the layer keeps no K or V
    int k_head_dim = 0;
    int v_head_dim = 0;  // 0: K only

    bool holds_kv() const { return n_kv_heads > 0; }
    bool operator==(const KvLayerShape& o) const {
        return n_kv_heads == o.n_kv_heads && k_head_dim == o.k_head_dim && v_head_dim == o.v_head_dim;
    }
    bool operator!=(const KvLayerShape& o) const { return !(*this == o); }
    // Bytes of one token's K (or V) in this layer (0 where it keeps none).
    size_t key_token_bytes(KvDtype dtype) const {
        return k_head_dim > 0 ? kv_token_bytes(n_kv_heads, k_head_dim, dtype) : 0;
    }
    size_t value_token_bytes(KvDtype dtype) const {
        return v_head_dim > 0 ? kv_token_bytes(n_kv_heads, v_head_dim, dtype) : 0;
    }
    // K and V of block_size tokens.
    size_t block_bytes(int block_size, KvDtype dtype) const {
        return size_t(block_size) * (key_token_bytes(dtype) + value_token_bytes(dtype));
    }
};

}  // namespace vllm
