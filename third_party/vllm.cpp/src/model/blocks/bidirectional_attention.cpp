#include "model/blocks/bidirectional_attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "util/error.h"

namespace vllm {

void whole_prompt_positions(const ModelConfig& c, const std::vector<SequenceSlice>& batch,
                            std::vector<int32_t>& positions) {
    positions.clear();
    for (const SequenceSlice& s : batch) {
        if (s.start_pos != 0 || s.num_logits != 0 || s.n_tokens > c.context_length)
            throw_runtime("internal error: an encoder (" + c.architecture +
                          ") runs whole prompts within its positions only, pooled, without logits");
        for (int i = 0; i < s.n_tokens; ++i) positions.push_back(i);
    }
}

void bidirectional_attention(const ModelConfig& c, const std::vector<SequenceSlice>& batch, int layer, const float* q,
                             const float* k, const float* v, float* out, ThreadPool& pool, const float* alibi_slopes) {
    const int heads = c.n_heads, kv_heads = c.kv_heads_of(layer), hd = c.head_dim_of(layer);
    const int group = heads / kv_heads;
    const int reach = c.is_sliding(layer) ? c.sliding_window / 2 : -1;  // -1: the whole slice
    int64_t first = 0;
    for (const SequenceSlice& s : batch) {
        if (s.start_pos != 0)
            throw_runtime("internal error: an encoder (" + c.architecture + ") attends over whole prompts only");
        const int n = s.n_tokens;
        const int64_t base = first;
        pool.parallel_for(int64_t(n) * heads, [&](int64_t begin, int64_t end) {
            std::vector<float> scores(n);
            for (int64_t job = begin; job < end; ++job) {
                const int t = static_cast<int>(job / heads), h = static_cast<int>(job % heads);
                const int lo = reach < 0 ? 0 : std::max(0, t - reach), hi = reach < 0 ? n : std::min(n, t + reach + 1);
                const float* qh = q + ((base + t) * heads + h) * hd;
                const int kvh = h / group;
                float top = -INFINITY;
                for (int j = lo; j < hi; ++j) {
                    const float* kh = k + ((base + j) * kv_heads + kvh) * hd;
                    float dot = 0.0f;
                    for (int i = 0; i < hd; ++i) dot += qh[i] * kh[i];
                    float score = dot * c.attn_scale;
                    if (c.attn_softcap > 0.0f) score = c.attn_softcap * std::tanh(score / c.attn_softcap);
                    if (alibi_slopes != nullptr) score -= alibi_slopes[h] * static_cast<float>(std::abs(t - j));
                    scores[j] = score;
                    top = std::max(top, score);
                }
                float sum = 0.0f;
                for (int j = lo; j < hi; ++j) sum += scores[j] = std::exp(scores[j] - top);
                float* o = out + ((base + t) * heads + h) * hd;
                std::fill_n(o, hd, 0.0f);
                for (int j = lo; j < hi; ++j) {
                    const float* vh = v + ((base + j) * kv_heads + kvh) * hd;
                    const float p = scores[j] / sum;
                    for (int i = 0; i < hd; ++i) o[i] += p * vh[i];
                }
            }
        });
        first += n;
    }
}

std::vector<float> alibi_slopes(int n_heads, float max_bias) {
    int power = 1;
    while (power * 2 <= n_heads) power *= 2;
    const float m0 = std::pow(2.0f, -max_bias / power), m1 = std::pow(2.0f, -(max_bias / 2.0f) / power);
    std::vector<float> slopes(n_heads);
    for (int h = 0; h < n_heads; ++h)
        slopes[h] = h < power ? std::pow(m0, float(h + 1)) : std::pow(m1, float(2 * (h - power) + 1));
    return slopes;
}

}  // namespace vllm
