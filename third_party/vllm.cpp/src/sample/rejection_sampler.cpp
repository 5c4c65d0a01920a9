#include "sample/rejection_sampler.h"

namespace vllm {

Verdict verify_draft_token(Sampler& sampler, const SamplingConfig& c, float* logits, int32_t vocab_size,
                           const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int32_t draft,
                           std::mt19937_64& rng) {
    const int32_t token = sampler.sample(c, logits, vocab_size, prompt, output, rng);
    return Verdict{token, token == draft};
}

}  // namespace vllm
