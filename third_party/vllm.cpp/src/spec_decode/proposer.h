// A draft-token proposer: given a request's tokens so far, guesses how it
// continues. The engine verifies every guess against the target model, so a
// proposer only changes speed, never output. Runs on the engine loop thread.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "spec_decode/speculative_config.h"

namespace vllm {

class Proposer {
public:
    virtual ~Proposer() = default;

    // Fills `draft` (cleared first) with at most `max_tokens` tokens that
    // may follow `tokens` (the prompt, then the output) of request `id`.
    virtual void propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, int max_tokens,
                         std::vector<int32_t>& draft) = 0;
    // The request is gone (finished, aborted or failed): drop its state.
    // `tokens` are its final tokens (suffix decoding keeps finished outputs).
    virtual void finished(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, bool completed) = 0;
};

// The proposer of config.method.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

}  // namespace vllm
