// Verifies one draft token against the target model's logits row for its
// position (speculative decoding), so that the tokens that come out follow
// exactly the distribution Sampler::sample would draw from.
//
// Greedy: the draft is accepted when it is the argmax after penalties;
// otherwise the argmax is the token. Sampling: the draft d is accepted with
// probability min(1, p(d) / q(d)), where p is the request's sampling
// distribution (penalties, temperature, min-p, top-k, top-p: the Sampler's
// own code) and q the proposer's; on rejection the token is drawn from the
// normalised residual max(0, p - q). The proposers here are model-free, so
// q is a point mass on d: acceptance is p(d) and the residual is p without d.
// Masks and logits processors are applied to the row by the caller first,
// as for an ordinary step.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "sample/sampler.h"

namespace vllm {

struct Verdict {
    int32_t token;  // the draft when accepted, else the replacement
    bool accepted;
};

// `logits` is modified in place (penalties), as Sampler::sample does.
Verdict verify_draft_token(Sampler& sampler, const SamplingConfig& config, float* logits, int32_t vocab_size,
                           const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int32_t draft,
                           std::mt19937_64& rng);

}  // namespace vllm
