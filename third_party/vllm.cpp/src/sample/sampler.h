// Turns one logits row into the next token: penalties, then greedy argmax,
// or temperature -> min-p -> top-k -> top-p -> a draw from the request's
// own RNG (so a seeded request repeats whatever else is batched with it).
// The order follows vLLM's sampler.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "engine/request_stream.h"
#include "sample/sampling_config.h"

namespace vllm {

class Sampler {
public:
    // `logits` (vocab floats) is modified in place. `prompt` and `output`
    // are the request's token ids so far: repetition penalty looks at both,
    // presence/frequency penalties at the output only (as vLLM does).
    static int32_t sample(const SamplingConfig& config, float* logits, int32_t vocab_size,
                          const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                          std::mt19937_64& rng);

    // log_softmax(logits)[token] and the `top` most likely tokens with theirs.
    static TokenLogprob logprobs(const float* logits, int32_t vocab_size, int32_t token, int32_t top);

    static void apply_penalties(const SamplingConfig& config, float* logits, int32_t vocab_size,
                                const std::vector<int32_t>& prompt, const std::vector<int32_t>& output);
};

}  // namespace vllm
