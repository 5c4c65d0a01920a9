#include "model/blocks/attention_heads.h"

#include "kernels/cpu/ops.h"
#include "model/blocks/norms.h"

namespace vllm {

void finish_attention_heads(const ModelConfig& c, const LayerWeights& w, const RotaryAngles& angles, bool rotary,
                            int64_t n_tokens, float* q, float* k, float* v, ThreadPool& pool) {
    const int hd = c.head_dim, pairs = c.rope_dim / 2;
    // Per token: q heads, k heads, v heads (q heads only without k).
    const int heads = c.n_heads + (k != nullptr ? 2 * c.n_kv_heads : 0);
    const bool halves = c.traits.rope_style == RopeStyle::HALVES;
    const std::vector<float> unit(c.value_norm ? hd : 0, 1.0f);  // the value norm's (absent) weight
    // OLMoE normalises each token's whole q and k rows before the heads.
    if (c.traits.qk_norm_whole && k != nullptr) {
        const int64_t q_dim = int64_t(c.n_heads) * hd, kv_dim = int64_t(c.n_kv_heads) * hd;
        pool.parallel_for(
            n_tokens,
            [&](int64_t begin, int64_t end) {
                for (int64_t t = begin; t < end; ++t) {
                    kernels::rms_norm(q + t * q_dim, w.q_norm.data(), q + t * q_dim, q_dim, c.rms_eps);
                    kernels::rms_norm(k + t * kv_dim, w.k_norm.data(), k + t * kv_dim, kv_dim, c.rms_eps);
                }
            },
            rows_per_chunk(q_dim + kv_dim));
    }
    pool.parallel_for(
        n_tokens * heads,
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const int64_t t = i / heads;
                int h = static_cast<int>(i % heads);
                const bool is_q = h < c.n_heads, is_k = !is_q && h < c.n_heads + c.n_kv_heads;
                h -= is_q ? 0 : is_k ? c.n_heads : c.n_heads + c.n_kv_heads;
                const int row_heads = is_q ? c.n_heads : c.n_kv_heads;
                float* x = (is_q ? q : is_k ? k : v) + (t * row_heads + h) * hd;
                if (c.traits.qkv_bias) {
                    const float* bias = (is_q ? w.bq : is_k ? w.bk : w.bv).data() + h * hd;
                    for (int j = 0; j < hd; ++j) x[j] += bias[j];
                }
                if (!is_q && !is_k) {
                    if (c.value_norm) kernels::rms_norm(x, unit.data(), x, hd, c.rms_eps);
                    continue;
                }
                if (c.traits.qk_norm && !c.traits.qk_norm_whole)
                    kernels::rms_norm(x, (is_q ? w.q_norm : w.k_norm).data(), x, hd, c.rms_eps);
                if (rotary) rotate(x, &angles.cos[t * pairs], &angles.sin[t * pairs], pairs, halves);
            }
        },
        rows_per_chunk(hd));
}

}  // namespace vllm
