// Turns one logits row into the next token: penalties, then greedy argmax,
// or temperature -> min-p -> top-k -> top-p -> a draw from the request's
// own RNG (so a seeded request repeats whatever else is batched with it).
// The order follows vLLM's sampler.
//
// The engine owns one Sampler and samples a step's requests one after
// another on its loop thread; the vocabulary-sized scratch (probabilities,
// candidate ids, penalty bookkeeping) lives here and is reused, so sampling
// a token allocates nothing once the first one has sized it. Not
// thread-safe: one Sampler per thread that samples.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "sample/sampling_config.h"
#include "sample/token_logprob.h"

namespace vllm {

class Sampler {
public:
    // `logits` (vocab floats) is modified in place. `prompt` and `output`
    // are the request's token ids so far: repetition penalty looks at both,
    // presence/frequency penalties at the output only (as vLLM does).
    int32_t sample(const SamplingConfig& config, float* logits, int32_t vocab_size,
                   const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, std::mt19937_64& rng);

    // The distribution sample() draws from, as vocab_size normalised
    // probabilities (zero outside the candidates; greedy: one-hot on the
    // argmax). The buffer is the Sampler's scratch, valid until its next
    // call; callers may edit it (the rejection sampler's residual).
    std::vector<float>& distribution(const SamplingConfig& config, float* logits, int32_t vocab_size,
                                     const std::vector<int32_t>& prompt, const std::vector<int32_t>& output);

    // log_softmax(logits)[token] and the `top` most likely tokens with theirs.
    TokenLogprob logprobs(const float* logits, int32_t vocab_size, int32_t token, int32_t top);

    void apply_penalties(const SamplingConfig& config, float* logits, int32_t vocab_size,
                         const std::vector<int32_t>& prompt, const std::vector<int32_t>& output);

private:
    // ids_[0, vocab_size) = 0, 1, 2, ...: the candidates before any cut.
    void reset_ids(int32_t vocab_size);
    // After the penalties, for a temperature > 0: probs_ = the unnormalised
    // softmax at the temperature, ids_[0, keep) the candidates that survive
    // min-p, top-k and top-p, and `total` their mass. Returns keep.
    size_t candidates(const SamplingConfig& config, const float* logits, int32_t vocab_size, double& total);

    std::vector<float> probs_;
    std::vector<int32_t> ids_;
    // Per-token state of the penalties, all zero between calls: only the
    // entries of the request's tokens are touched, and cleared after.
    std::vector<uint8_t> seen_;
    std::vector<int32_t> counts_;
    std::vector<float> dense_;  // distribution()'s result
};

// A draw from `weights` (n non-negative, not necessarily normalised, some
// positive): index i with probability weights[i] / sum.
int32_t draw_index(const float* weights, int32_t n, std::mt19937_64& rng);

}  // namespace vllm
