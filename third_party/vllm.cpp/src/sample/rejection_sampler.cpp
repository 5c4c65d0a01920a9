#include "sample/rejection_sampler.h"

namespace vllm {

Verdict verify_draft_token(Sampler& sampler, const SamplingConfig& c, float* logits, int32_t vocab_size,
                           const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int32_t draft,
                           std::mt19937_64& rng) {
    sampler.apply_penalties(c, logits, vocab_size, prompt, output);
    if (c.greedy()) {
        const int32_t best = Sampler::argmax(logits, vocab_size);
        return Verdict{best, best == draft};
    }
    const double total = sampler.candidates(c, logits, vocab_size);
    const double draft_weight = sampler.weight(draft);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (unit(rng) * total < draft_weight) return Verdict{draft, true};
    std::uniform_real_distribution<double> residual(0.0, total - draft_weight);
    return Verdict{sampler.draw(residual(rng), draft), false};
}

}  // namespace vllm
