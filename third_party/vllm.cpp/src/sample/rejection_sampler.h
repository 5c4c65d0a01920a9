// Verifies one draft token against the target model's logits row for its
// position (speculative decoding), so that the tokens that come out follow
// exactly the distribution Sampler::sample draws from.
//
// The standard rule accepts a draft d with probability min(1, p(d) / q(d)),
// p being the request's sampling distribution (penalties, temperature,
// min-p, top-k, top-p) and q the proposer's, and on rejection draws from
// the normalised residual max(0, p - q). The proposers here are model-free:
// q is a point mass on d, so acceptance is p(d) and the residual is p
// without d, renormalised. That is exactly what one ordinary draw x ~ p
// gives when d is accepted iff x == d (P = p(d)) and x is the token
// otherwise (x given x != d follows the residual). So verification makes
// the ordinary draw, with the request's own generator, and compares: each
// emitted token costs one draw as without speculation, and a seeded
// request gives the same text with speculation on or off. Greedy is the
// special case: accepted iff d is the argmax after penalties.
// The draft model samples its drafts from a real q (its own distribution);
// verify_sampled_draft_token applies the rule with it, drawing a uniform
// for the acceptance and, on rejection, a token from the residual.
// Masks and logits processors are applied to the row by the caller first,
// as for an ordinary step.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "sample/sampler.h"

namespace vllm {

struct Verdict {
    int32_t token;  // the draft when accepted, else the target's token
    bool accepted;
};

// `logits` is modified in place (penalties), as Sampler::sample does.
Verdict verify_draft_token(Sampler& sampler, const SamplingConfig& config, float* logits, int32_t vocab_size,
                           const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int32_t draft,
                           std::mt19937_64& rng);

// The same for a draft drawn from `q` (vocab_size probabilities with
// q[draft] > 0). Greedy configs compare with the argmax as above.
Verdict verify_sampled_draft_token(Sampler& sampler, const SamplingConfig& config, float* logits, int32_t vocab_size,
                                   const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                                   int32_t draft, const float* q, std::mt19937_64& rng);

}  // namespace vllm
