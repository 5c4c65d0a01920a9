// The body of ops.h's kernels, written as plain loops that vectorize well
// (fixed-width lane accumulators instead of reductions, no calls in inner
// loops). Included by one .cpp per instruction set inside a distinct
// namespace, so each copy is compiled with that ISA's flags.
// Expects VLLM_OPS_NAMESPACE to be defined by the including file.
// No standard containers or other out-of-line templates here: the linker
// keeps one copy of each template instantiation, and an AVX-512 copy could
// end up serving the scalar path on a CPU without AVX-512.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/ops.h"

namespace vllm::kernels::VLLM_OPS_NAMESPACE {

namespace {

constexpr int kLanes = 16;  // accumulator width: one AVX-512 register, two AVX2 ones

inline float max_of(float a, float b) { return a > b ? a : b; }
inline int min_of(int a, int b) { return a < b ? a : b; }

inline float dot(const float* a, const float* b, int n) {
    float acc[kLanes] = {};
    int i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
    float sum = 0.0f;
    for (int l = 0; l < kLanes; ++l) sum += acc[l];
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

inline void axpy(float s, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] += s * x[i];
}

inline void scale(float s, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] *= s;
}

// exp(x) for x <= 0 via 2^(x log2 e): integer part into the exponent bits,
// fraction by a degree-6 polynomial (relative error ~1e-7). Branch-free so
// loops over it vectorize.
inline float fast_exp(float x) {
    x = max_of(x, -87.0f);
    const float t = x * 1.44269504088896341f;
    const float fi = std::floor(t);
    const float f = t - fi;
    float p = 1.53533005e-4f;
    p = p * f + 1.33988122e-3f;
    p = p * f + 9.61835026e-3f;
    p = p * f + 5.55041086e-2f;
    p = p * f + 2.40226507e-1f;
    p = p * f + 6.93147182e-1f;
    p = p * f + 1.0f;
    const int32_t bits = (static_cast<int32_t>(fi) + 127) << 23;
    float scale2;
    std::memcpy(&scale2, &bits, sizeof scale2);
    return p * scale2;
}

}  // namespace

void attention_tile(const PagedAttention& a, const int32_t* block_table, int64_t t_begin, int64_t t_end,
                    int kv_head) {
    const int hd = a.head_dim, group = a.n_heads / a.n_kv_heads, bs = a.block_size;
    const int kv_stride = a.n_kv_heads * hd;
    // Query vectors of this tile: (token, head-in-group), pre-scaled.
    const int nq = static_cast<int>(t_end - t_begin) * group;
    float q[kAttentionMaxQueries * kAttentionMaxHeadDim];
    float o[kAttentionMaxQueries * kAttentionMaxHeadDim];
    float m[kAttentionMaxQueries], l[kAttentionMaxQueries];
    int32_t pos[kAttentionMaxQueries];
    for (int qi = 0; qi < nq; ++qi) {
        m[qi] = -INFINITY;
        l[qi] = 0.0f;
    }
    for (int i = 0; i < nq * hd; ++i) o[i] = 0.0f;
    for (int64_t t = t_begin; t < t_end; ++t)
        for (int g = 0; g < group; ++g) {
            const int qi = static_cast<int>(t - t_begin) * group + g;
            const float* src = a.q + (t * a.n_heads + kv_head * group + g) * hd;
            for (int d = 0; d < hd; ++d) q[size_t(qi) * hd + d] = src[d] * a.scale;
            pos[qi] = a.positions[t];
        }
    // Keys are visited in chunks of kLanes slots, transposed to [dim][slot]
    // once per chunk so every query's scores for the chunk are kLanes-wide
    // multiply-adds with no horizontal sums.
    const int last = a.positions[t_end - 1];
    float kt[kAttentionMaxHeadDim * kLanes];
    for (int chunk_start = 0; chunk_start <= last; chunk_start += kLanes) {
        const int n_keys = min_of(kLanes, last + 1 - chunk_start);
        const float* values[kLanes];
        for (int j = 0; j < kLanes; ++j) {
            const int p = chunk_start + min_of(j, n_keys - 1);  // pad with a real key; masked below
            const size_t slot = (size_t(block_table[p / bs]) * bs + p % bs) * kv_stride + size_t(kv_head) * hd;
            const float* key = a.k_cache + slot;
            values[j] = a.v_cache + slot;
            for (int d = 0; d < hd; ++d) kt[d * kLanes + j] = key[d];
        }
        for (int qi = 0; qi < nq; ++qi) {
            // Causal: this query sees keys up to its own position.
            const int visible = min_of(n_keys, pos[qi] + 1 - chunk_start);
            if (visible <= 0) continue;
            float sc[kLanes] = {};
            const float* qv = &q[size_t(qi) * hd];
            for (int d = 0; d < hd; ++d)
                for (int j = 0; j < kLanes; ++j) sc[j] += qv[d] * kt[d * kLanes + j];
            float chunk_max = -INFINITY;
            for (int j = 0; j < visible; ++j) chunk_max = max_of(chunk_max, sc[j]);
            float* oq = &o[size_t(qi) * hd];
            const float new_max = max_of(m[qi], chunk_max);
            const float correction = fast_exp(m[qi] - new_max);
            if (correction != 1.0f) {
                scale(correction, oq, hd);
                l[qi] *= correction;
            }
            m[qi] = new_max;
            float pr[kLanes];
            for (int j = 0; j < kLanes; ++j) pr[j] = fast_exp(sc[j] - new_max);
            for (int j = 0; j < visible; ++j) {
                l[qi] += pr[j];
                axpy(pr[j], values[j], oq, hd);
            }
        }
    }
    for (int64_t t = t_begin; t < t_end; ++t)
        for (int g = 0; g < group; ++g) {
            const int qi = static_cast<int>(t - t_begin) * group + g;
            float* dst = a.out + (t * a.n_heads + kv_head * group + g) * hd;
            const float inv = 1.0f / l[qi];
            for (int d = 0; d < hd; ++d) dst[d] = o[size_t(qi) * hd + d] * inv;
        }
}

void silu_mul(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        // silu(g) = g / (1 + e^-g); e^-|g| keeps fast_exp's argument <= 0.
        const float e = fast_exp(-std::fabs(g));
        const float sigmoid = g >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
        gate[i] = g * sigmoid * up[i];
    }
}

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    const float sum = dot(x, x, static_cast<int>(n));
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

}  // namespace vllm::kernels::VLLM_OPS_NAMESPACE
