#include "spec_decode/speculation_policy.h"

namespace vllm {

SpeculationPolicy::SpeculationPolicy(const SpeculativeConfig& c)
    : num_speculative_tokens_(c.num_speculative_tokens), disable_by_batch_size_(c.disable_by_batch_size) {}

bool SpeculationPolicy::step_allowed(int batch_size) const {
    return disable_by_batch_size_ == 0 || batch_size <= disable_by_batch_size_;
}

int SpeculationPolicy::max_draft_tokens(uint64_t id) {
    auto it = states_.find(id);
    if (it == states_.end() || it->second.paused_steps == 0) return num_speculative_tokens_;
    --it->second.paused_steps;
    return 0;
}

void SpeculationPolicy::record(uint64_t id, int drafted, int accepted) {
    State& s = states_[id];
    s.drafted += drafted;
    s.accepted += accepted;
    if (s.drafted < kWindow) return;
    if (s.accepted < kMinAcceptance * s.drafted) s.paused_steps = kPauseSteps;
    s.drafted = s.accepted = 0;
}

void SpeculationPolicy::forget(uint64_t id) { states_.erase(id); }

}  // namespace vllm
