#include "sample/rejection_sampler.h"

#include <algorithm>

namespace vllm {

Verdict verify_draft_token(Sampler& sampler, const SamplingConfig& c, float* logits, int32_t vocab_size,
                           const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int32_t draft,
                           std::mt19937_64& rng) {
    const int32_t token = sampler.sample(c, logits, vocab_size, prompt, output, rng);
    return Verdict{token, token == draft};
}

Verdict verify_sampled_draft_token(Sampler& sampler, const SamplingConfig& c, float* logits, int32_t vocab_size,
                                   const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                                   int32_t draft, const float* q, std::mt19937_64& rng) {
    if (c.greedy()) return verify_draft_token(sampler, c, logits, vocab_size, prompt, output, draft, rng);
    std::vector<float>& p = sampler.distribution(c, logits, vocab_size, prompt, output);
    // Accept with probability min(1, p(d) / q(d)).
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    if (uniform(rng) * q[draft] < p[draft]) return Verdict{draft, true};
    // Rejected: the residual max(0, p - q), normalised by the draw. It is
    // empty only where p equals q up to rounding, and then p is the answer.
    double residual_mass = 0.0;
    for (int32_t i = 0; i < vocab_size; ++i) residual_mass += std::max(0.0f, p[i] - q[i]);
    if (residual_mass > 0.0)
        for (int32_t i = 0; i < vocab_size; ++i) p[i] = std::max(0.0f, p[i] - q[i]);
    return Verdict{draw_index(p.data(), vocab_size, rng), false};
}

}  // namespace vllm
