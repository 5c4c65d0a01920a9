#include "spec_decode/speculation_policy.h"

#include <algorithm>
#include <cmath>

namespace vllm {

DraftChoice best_draft_length(double alpha, int max_k, int decoding, double draft, const SpeculationCosts& costs) {
    DraftChoice best;
    const std::optional<double> plain = costs.forward_seconds(decoding, decoding);
    if (!plain) return best;
    const double u = *plain / decoding;
    bool known = false;
    for (int k = 1; k <= max_k; ++k) {
        const std::optional<double> wide = costs.forward_seconds(decoding, decoding + k);
        if (!wide) continue;
        const double tokens = alpha >= 1.0 ? k + 1.0 : (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
        // A wider forward measured faster than the plain one is noise: it costs at least nothing.
        const double seconds = u + std::max(0.0, *wide - *plain) + k * draft;
        const double speedup = tokens * u / seconds;
        if (!known || speedup > best.speedup) best = {k, speedup};
        known = true;
    }
    return known ? best : DraftChoice{};
}

SpeculationPolicy::SpeculationPolicy(const SpeculativeConfig& c)
    : num_speculative_tokens_(c.num_speculative_tokens),
      adapt_length_(c.method == SpeculativeMethod::DRAFT_MODEL),
      disable_by_batch_size_(c.disable_by_batch_size) {}

bool SpeculationPolicy::step_allowed(int batch_size) const {
    return disable_by_batch_size_ == 0 || batch_size <= disable_by_batch_size_;
}

int SpeculationPolicy::acceptance_rule_length(const State& s) const {
    return s.length > 0 ? s.length : num_speculative_tokens_;
}

int SpeculationPolicy::max_draft_tokens(uint64_t id, int decoding, bool timed) {
    const auto [it, fresh] = states_.try_emplace(id);
    State& s = it->second;
    if (s.paused_steps > 0) {
        --s.paused_steps;
        return 0;
    }
    if (!timed) return acceptance_rule_length(s);
    if (!costs_.forward_seconds(decoding, decoding)) return fresh ? 0 : acceptance_rule_length(s);
    const std::optional<double> draft = costs_.draft_seconds();
    if (!s.alpha || !draft) return acceptance_rule_length(s);
    const DraftChoice choice = best_draft_length(*s.alpha, num_speculative_tokens_, decoding, *draft, costs_);
    if (choice.k == 0) return acceptance_rule_length(s);
    if (choice.speedup >= kMinGain) return choice.k;
    // Not worth it now: pause, then probe the acceptance again at length 1
    // (it may have changed with the text; the cheapest probe).
    s.paused_steps = kPauseSteps;
    s.alpha.reset();
    s.length = 1;
    s.drafted = s.accepted = s.rejections = 0;
    return 0;
}

void SpeculationPolicy::record(uint64_t id, int drafted, int accepted) {
    State& s = states_[id];
    s.drafted += drafted;
    s.accepted += accepted;
    if (accepted < drafted) ++s.rejections;
    if (s.drafted < kWindow) return;
    const double alpha = double(s.accepted) / (s.accepted + s.rejections);  // drafted > 0: one of them is > 0
    s.alpha = alpha;
    if (s.accepted < kMinAcceptance * s.drafted) {
        s.paused_steps = kPauseSteps;
        s.alpha.reset();
    }
    if (adapt_length_) {
        const double run = alpha >= 1.0 ? num_speculative_tokens_ : std::round(alpha / (1.0 - alpha));
        s.length = static_cast<int>(std::clamp(run, 1.0, double(num_speculative_tokens_)));
    } else {
        s.length = 0;
    }
    s.drafted = s.accepted = s.rejections = 0;
}

void SpeculationPolicy::forget(uint64_t id) { states_.erase(id); }

}  // namespace vllm
