// Model-side kernels besides the matmuls: paged attention and the
// element-wise activations. Like the matmuls they are compiled once per
// instruction set (ops_impl.h included by ops_scalar.cpp, ops_avx2.cpp,
// ops_avx512.cpp, ops_neon.cpp), each build's entries in its IsaKernels
// table (isa.h), so they follow the matmuls' choice of instruction set.
#pragma once
#include <cmath>
#include <cstdint>

#include "dtype/kv_dtype.h"

namespace vllm::kernels {

// One layer's paged attention inputs. Cache layouts per block (kv_cache.h),
// elements of kv_dtype (floats, IEEE halves as 16-bit patterns, or int8):
// K [n_kv_heads][head_dim][block_size] (slot-minor),
// V [n_kv_heads][block_size][head_dim],
// for int8 each followed by its half scales [n_kv_heads][block_size]; blocks
// kv_token_bytes() x block_size bytes apart.
struct PagedAttention {
    const float* q = nullptr;         // [n_tokens][n_heads][head_dim], RoPE applied
    float* out = nullptr;             // [n_tokens][n_heads][head_dim]
    const int32_t* positions = nullptr;  // absolute position of each batch token
    const void* k_cache = nullptr;
    const void* v_cache = nullptr;
    KvDtype kv_dtype = KvDtype::F32;
    int block_size = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    float scale = 1.0f;
    // Sliding window: a query at position p sees only keys at
    // (p - window, p]. 0: every earlier key.
    int window = 0;
    // Gemma 2: scores become softcap * tanh(score / softcap). 0: uncapped.
    float softcap = 0.0f;
    // gpt-oss's attention sinks: one learned logit per query head that
    // joins every query's softmax denominator (and weights no value), so a
    // query's weights may sum to less than 1. nullptr: none.
    const float* sinks = nullptr;
};

// The normaliser of a query's weighted value sum: 1 / (its weight sum l,
// relative to its maximum m, plus the head's sink e^(sink - m) if any).
inline float attention_normaliser(const PagedAttention& a, int head, float m, float l) {
    return 1.0f / (a.sinks == nullptr ? l : l + std::exp(a.sinks[head] - m));
}

// Limits of one attention tile (the kernel keeps a tile on the stack).
constexpr int kAttentionMaxQueries = 64;     // tokens x query heads per KV head
constexpr int kAttentionMaxHeadDim = 512;    // Gemma 4's full layers
// The floats of a tile's queries (and of its outputs): 64 queries of up to
// 256 dims, fewer of wider heads (attention_max_queries).
constexpr int kAttentionTileFloats = 64 * 256;
constexpr int attention_max_queries(int head_dim) {
    return kAttentionTileFloats / head_dim < kAttentionMaxQueries ? kAttentionTileFloats / head_dim
                                                                   : kAttentionMaxQueries;
}
constexpr int kAttentionHeadDimMultiple = 16;  // head_dim is walked 16 floats at a time

// One unit of attention work: batch tokens [t_begin, t_end) — consecutive
// positions of one sequence whose blocks are `block_table` — and the query
// heads sharing KV head `kv_head` ((t_end - t_begin) x group <=
// kAttentionMaxQueries), over the keys at positions [key_begin, key_end)
// that causality lets each query see.
struct AttentionTile {
    const int32_t* block_table = nullptr;
    int64_t t_begin = 0, t_end = 0;
    int kv_head = 0;
    int key_begin = 0;           // a multiple of kAttentionHeadDimMultiple
    int key_end = 1 << 30;
    // nullptr: write the normalised rows to PagedAttention::out. Otherwise the
    // tile covers part of the keys: it writes attention_partial_floats()
    // floats here for merge_attention_partials.
    float* partial = nullptr;
};

// Keys are visited once per tile with an online softmax (no score matrix is
// materialised).
void attention_tile(const PagedAttention& a, const AttentionTile& tile);

// Floats a partial result of `tile` takes: per query vector its unnormalised
// weighted value sum (head_dim), running maximum and weight sum.
int64_t attention_partial_floats(const PagedAttention& a, const AttentionTile& tile);

// Writes the rows of `tile` (its whole key range) to PagedAttention::out from
// the partials of n tiles that split that key range between them (flash-
// decoding: long contexts spread over threads even for one sequence).
void merge_attention_partials(const PagedAttention& a, const AttentionTile& tile, const float* const* partials,
                              int n);

// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int64_t n);

// gate[i] = gelu_tanh(gate[i]) * up[i], GELU's tanh approximation (GeGLU).
void gelu_tanh_mul(float* gate, const float* up, int64_t n);

// gpt-oss's clamped SwiGLU (ggml's swiglu_oai): with g = min(gate[i], limit)
// and u = clamp(up[i], -limit, limit), gate[i] = g * sigmoid(alpha g) * (u + 1).
// Scalar on every build (only gpt-oss's experts use it).
void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit);

// x[i] = cap * tanh(x[i] / cap) (Gemma 2's logit soft-capping), cap > 0.
void soft_cap(float* x, int64_t n, float cap);

// The sum of exp(x[i] - shift), each x[i] <= shift (a softmax's
// denominator, shift its largest input); relative error about 1e-6.
float sum_exp(const float* x, int64_t n, float shift);

// out = x / rms(x) * weight, over n elements (out may alias x).
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

}  // namespace vllm::kernels
