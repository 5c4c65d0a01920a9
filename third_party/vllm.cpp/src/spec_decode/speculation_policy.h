// The dynamic switch: how many draft tokens a request may verify this step.
// Speculation costs a wider forward (k + 1 positions instead of 1) and pays
// only in accepted tokens, so it is switched off
// - for the whole step when the batch is large (more than
//   disable_by_batch_size running and waiting requests): the forward is then
//   compute-bound and extra positions cost about what they would yield;
// - per request, for kPauseSteps steps, when its acceptance over its last
//   kWindow draft tokens fell below kMinAcceptance; it then tries again.
// With the draft model every draft token costs a draft forward, so a
// request's draft length also follows its acceptance: after each window,
// from the estimated chance alpha that a draft token is accepted given the
// ones before it were (accepted / (accepted + rejections)), the length is
// alpha / (1 - alpha), the expected run of accepted tokens, rounded, within
// 1..num_speculative_tokens. Model-free drafts cost nothing to make and
// keep the full length.
// vLLM's dynamic speculation decides the same from measured step times; the
// constants here were measured on the CPU kernels (BENCHMARKS.md).
#pragma once
#include <cstdint>
#include <unordered_map>

#include "spec_decode/speculative_config.h"

namespace vllm {

class SpeculationPolicy {
public:
    explicit SpeculationPolicy(const SpeculativeConfig& config);

    // True when this step may speculate at all (`batch_size`: running plus waiting requests).
    bool step_allowed(int batch_size) const;
    // The most draft tokens request `id` may get now (0: paused); each call
    // of a paused request counts one of its pause steps.
    int max_draft_tokens(uint64_t id);
    // The outcome of verifying a draft of `drafted` tokens.
    void record(uint64_t id, int drafted, int accepted);
    void forget(uint64_t id);

    static constexpr int kWindow = 16;
    static constexpr double kMinAcceptance = 0.25;
    static constexpr int kPauseSteps = 32;

private:
    struct State {
        int drafted = 0, accepted = 0;  // since the window began
        int rejections = 0;             // verifications that rejected a draft token, since the window began
        int paused_steps = 0;
        int length = 0;                 // the adapted draft length (0: num_speculative_tokens)
    };
    int num_speculative_tokens_;
    bool adapt_length_;
    int disable_by_batch_size_;
    std::unordered_map<uint64_t, State> states_;
};

}  // namespace vllm
