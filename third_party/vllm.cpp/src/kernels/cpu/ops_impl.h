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
    float s[kAttentionMaxBlockSize];
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
    const int last = a.positions[t_end - 1];
    for (int block_start = 0; block_start <= last; block_start += bs) {
        const int32_t block = block_table[block_start / bs];
        const int n_slots = min_of(bs, last + 1 - block_start);
        const float* kb = a.k_cache + size_t(block) * bs * kv_stride + size_t(kv_head) * hd;
        const float* vb = a.v_cache + size_t(block) * bs * kv_stride + size_t(kv_head) * hd;
        for (int qi = 0; qi < nq; ++qi) {
            // Causal: this query sees slots up to its own position.
            const int visible = min_of(n_slots, pos[qi] + 1 - block_start);
            if (visible <= 0) continue;
            float block_max = -INFINITY;
            for (int j = 0; j < visible; ++j) {
                s[j] = dot(&q[size_t(qi) * hd], kb + size_t(j) * kv_stride, hd);
                block_max = max_of(block_max, s[j]);
            }
            float* oq = &o[size_t(qi) * hd];
            const float new_max = max_of(m[qi], block_max);
            const float correction = fast_exp(m[qi] - new_max);
            if (correction != 1.0f) {
                scale(correction, oq, hd);
                l[qi] *= correction;
            }
            m[qi] = new_max;
            for (int j = 0; j < visible; ++j) {
                const float p = fast_exp(s[j] - new_max);
                l[qi] += p;
                axpy(p, vb + size_t(j) * kv_stride, oq, hd);
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
