// Model-side kernels besides the matmuls: paged attention and the
// element-wise activations. Like the matmuls they are compiled once per
// instruction set (ops_impl.h included by ops_scalar.cpp, ops_avx2.cpp,
// ops_avx512.cpp) and picked at run time by ops.cpp, following
// kernels::active_isa().
#pragma once
#include <cstdint>

namespace vllm::kernels {

// One layer's paged attention inputs. K/V cache layout per layer:
// [num_blocks][block_size][n_kv_heads][head_dim].
struct PagedAttention {
    const float* q = nullptr;         // [n_tokens][n_heads][head_dim], RoPE applied
    float* out = nullptr;             // [n_tokens][n_heads][head_dim]
    const int32_t* positions = nullptr;  // absolute position of each batch token
    const float* k_cache = nullptr;
    const float* v_cache = nullptr;
    int block_size = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    float scale = 1.0f;
};

// Limits of one attention tile (the kernel keeps a tile on the stack).
constexpr int kAttentionMaxQueries = 64;     // tokens x query heads per KV head
constexpr int kAttentionMaxHeadDim = 256;
constexpr int kAttentionHeadDimMultiple = 16;  // head_dim is walked 16 floats at a time

// Causal attention for batch tokens [t_begin, t_end) — consecutive
// positions of one sequence whose blocks are `block_table` — and the query
// heads sharing KV head `kv_head` ((t_end - t_begin) x group <=
// kAttentionMaxQueries). Keys are visited once per tile with an
// online softmax (no score matrix is materialised).
void attention_tile(const PagedAttention& a, const int32_t* block_table, int64_t t_begin, int64_t t_end,
                    int kv_head);

// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int64_t n);

// out = x / rms(x) * weight, over n elements (out may alias x).
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

}  // namespace vllm::kernels
