// The dynamic switch: how many draft tokens a request may verify this step.
// Speculation costs a wider forward (k + 1 positions instead of 1) and, with
// a draft model, k draft steps; it pays only in accepted tokens. So:
// - for the whole step it is off when the batch is large (more than
//   disable_by_batch_size running and waiting requests);
// - per request, its acceptance is measured over windows of kWindow draft
//   tokens: alpha, the chance that a draft token is accepted given the ones
//   before it were (accepted / (accepted + rejections));
// - where the costs are measured (speculation_costs.h), the draft length k
//   is the one with the best expected speedup over not speculating: a step
//   yields E(k) = (1 - alpha^(k+1)) / (1 - alpha) tokens for
//   u + (T(n, n + k) - T(n, n)) + k d seconds, against u = T(n, n) / n
//   seconds a token without speculation (T(n, m): a forward of the n
//   requests in decode computing m positions, d: a draft token's share of
//   a draft step). When no k is expected to gain at least kMinGain, the
//   request pauses for kPauseSteps steps, then measures its acceptance
//   again at length 1. A request's first decode step does not speculate
//   while T(n, n) is unknown, so the plain forward gets measured;
// - where they are not (yet), and for requests whose sample must not depend
//   on timing (see max_draft_tokens), the rule of acceptance alone: a pause
//   when acceptance over a window fell below kMinAcceptance, and, for the
//   draft model, the length alpha / (1 - alpha), the expected run of
//   accepted tokens, within 1..num_speculative_tokens.
// vLLM's dynamic speculation decides from measured step times too.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "spec_decode/speculation_costs.h"
#include "spec_decode/speculative_config.h"

namespace vllm {

// The draft length with the best expected speedup (see above) and that
// speedup, given alpha, the draft model's seconds per draft token `draft`,
// `decoding` requests in decode and the forward costs; k = 0 (speedup 1)
// when no length's costs are known.
struct DraftChoice {
    int k = 0;
    double speedup = 1.0;
};
DraftChoice best_draft_length(double alpha, int max_k, int decoding, double draft, const SpeculationCosts& costs);

class SpeculationPolicy {
public:
    explicit SpeculationPolicy(const SpeculativeConfig& config);

    // True when this step may speculate at all (`batch_size`: running plus waiting requests).
    bool step_allowed(int batch_size) const;
    // The most draft tokens request `id` may get now (0: none); each call
    // of a paused request counts one of its pause steps. `decoding`: the
    // requests in decode this step. `timed`: whether the length may follow
    // measured costs; false for a seeded request that samples from a draft
    // model's q, whose drafts and so whose sample depend on the draft
    // length: it must repeat from run to run, and timings do not.
    int max_draft_tokens(uint64_t id, int decoding, bool timed);
    // The outcome of verifying a draft of `drafted` tokens.
    void record(uint64_t id, int drafted, int accepted);
    void forget(uint64_t id);

    SpeculationCosts& costs() { return costs_; }

    static constexpr int kWindow = 16;
    static constexpr double kMinAcceptance = 0.25;
    static constexpr int kPauseSteps = 32;
    // Estimates from a loaded machine are rough: a length must promise 5%
    // to be worth the wider forward.
    static constexpr double kMinGain = 1.05;

private:
    struct State {
        int drafted = 0, accepted = 0;  // since the window began
        int rejections = 0;             // verifications that rejected a draft token, since the window began
        int paused_steps = 0;
        int length = 0;                 // the acceptance rule's draft length (0: num_speculative_tokens)
        std::optional<double> alpha;    // from the last whole window since the last pause
    };
    int acceptance_rule_length(const State& s) const;

    int num_speculative_tokens_;
    bool adapt_length_;
    int disable_by_batch_size_;
    SpeculationCosts costs_;
    std::unordered_map<uint64_t, State> states_;
};

}  // namespace vllm
