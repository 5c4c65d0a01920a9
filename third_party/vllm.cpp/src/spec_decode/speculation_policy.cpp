#include "spec_decode/speculation_policy.h"

#include <algorithm>
#include <cmath>

namespace vllm {

SpeculationPolicy::SpeculationPolicy(const SpeculativeConfig& c)
    : num_speculative_tokens_(c.num_speculative_tokens),
      adapt_length_(c.method == SpeculativeMethod::DRAFT_MODEL),
      disable_by_batch_size_(c.disable_by_batch_size) {}

bool SpeculationPolicy::step_allowed(int batch_size) const {
    return disable_by_batch_size_ == 0 || batch_size <= disable_by_batch_size_;
}

int SpeculationPolicy::max_draft_tokens(uint64_t id) {
    auto it = states_.find(id);
    if (it == states_.end()) return num_speculative_tokens_;
    if (it->second.paused_steps == 0) return it->second.length > 0 ? it->second.length : num_speculative_tokens_;
    --it->second.paused_steps;
    return 0;
}

void SpeculationPolicy::record(uint64_t id, int drafted, int accepted) {
    State& s = states_[id];
    s.drafted += drafted;
    s.accepted += accepted;
    if (accepted < drafted) ++s.rejections;
    if (s.drafted < kWindow) return;
    if (s.accepted < kMinAcceptance * s.drafted) s.paused_steps = kPauseSteps;
    if (adapt_length_) {
        const double alpha = double(s.accepted) / (s.accepted + s.rejections);  // drafted > 0: one of them is > 0
        const double run = alpha >= 1.0 ? num_speculative_tokens_ : std::round(alpha / (1.0 - alpha));
        s.length = static_cast<int>(std::clamp(run, 1.0, double(num_speculative_tokens_)));
    }
    s.drafted = s.accepted = s.rejections = 0;
}

void SpeculationPolicy::forget(uint64_t id) { states_.erase(id); }

}  // namespace vllm
