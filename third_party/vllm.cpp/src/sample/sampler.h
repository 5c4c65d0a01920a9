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

    // The pieces of sample(), for the rejection sampler (rejection_sampler.h),
    // which must draw from exactly the same distribution.
    static int32_t argmax(const float* logits, int32_t vocab_size);
    // The candidates after temperature, min-p, top-k and top-p over logits
    // that already carry the penalties; returns their total unnormalised
    // weight. weight() and draw() read them until the next call.
    double candidates(const SamplingConfig& config, const float* logits, int32_t vocab_size);
    // A candidate's unnormalised weight; 0 for a token that was cut.
    double weight(int32_t token) const;
    // The candidate at cumulative weight r (0 <= r < the candidates' total
    // weight, less `excluded`'s), skipping `excluded` (-1: none).
    int32_t draw(double r, int32_t excluded = -1) const;

private:
    // ids_[0, vocab_size) = 0, 1, 2, ...: the candidates before any cut.
    void reset_ids(int32_t vocab_size);

    std::vector<float> probs_;
    std::vector<int32_t> ids_;
    size_t keep_ = 0;  // candidates(): ids_[0, keep_) survived the cuts
    // Per-token state of the penalties, all zero between calls: only the
    // entries of the request's tokens are touched, and cleared after.
    std::vector<uint8_t> seen_;
    std::vector<int32_t> counts_;
};

}  // namespace vllm
