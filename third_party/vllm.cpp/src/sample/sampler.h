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

    // log_softmax(logits)[token] and the `top` most likely tokens with theirs.
    TokenLogprob logprobs(const float* logits, int32_t vocab_size, int32_t token, int32_t top);

    void apply_penalties(const SamplingConfig& config, float* logits, int32_t vocab_size,
                         const std::vector<int32_t>& prompt, const std::vector<int32_t>& output);

private:
    // ids_[0, vocab_size) = 0, 1, 2, ...: the candidates before any cut.
    void reset_ids(int32_t vocab_size);

    std::vector<float> probs_;
    std::vector<int32_t> ids_;
    // Per-token state of the penalties, all zero between calls: only the
    // entries of the request's tokens are touched, and cleared after.
    std::vector<uint8_t> seen_;
    std::vector<int32_t> counts_;
};

}  // namespace vllm
