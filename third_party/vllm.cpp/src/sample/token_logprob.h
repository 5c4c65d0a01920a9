// A sampled token's log-probability and its most likely alternatives: what
// the sampler computes and the request streams and chat responses carry.
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace vllm {

// One generated token's log-probability and the most likely alternatives.
struct TokenLogprob {
    int32_t token = 0;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top;  // (token, logprob), most likely first
    // vLLM's rank: how many tokens are at least as likely (1: the most
    // likely); 0 where none was computed (a jump-forward token's entry).
    int32_t rank = 0;
};

// A log-probability as JSON can carry it: JSON has no infinities, and vLLM
// sends -9999.0 for a token of probability 0 (a masked one).
inline double finite_logprob(double logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }

}  // namespace vllm
