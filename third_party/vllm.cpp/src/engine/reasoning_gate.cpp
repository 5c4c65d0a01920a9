#include "engine/reasoning_gate.h"

#include <cmath>

#include "tokenizer/tokenizer.h"

namespace vllm {

ReasoningGate::ReasoningGate(const SamplingConfig::ReasoningSection& section, const Tokenizer& tokenizer)
    : end_marker_(section.end_marker), budget_(section.token_budget), inside_(!section.end_marker.empty()) {
    if (inside_ && budget_ >= 0)
        forced_ids_ = tokenizer.encode(section.forced_end.empty() ? section.end_marker : section.forced_end,
                                       /*add_special=*/false, /*parse_special=*/true);
}

void ReasoningGate::force(float* logits, int32_t vocab) const {
    if (!inside_ || !forcing() || forced_next_ >= forced_ids_.size()) return;
    const int32_t forced = forced_ids_[forced_next_];
    if (forced < 0 || forced >= vocab) return;
    const float kept = std::isfinite(logits[forced]) ? logits[forced] : 0.0f;
    for (int32_t id = 0; id < vocab; ++id) logits[id] = -INFINITY;
    logits[forced] = kept;
}

void ReasoningGate::accept(int32_t token, std::string_view text) {
    if (!inside_) return;
    if (forcing() && forced_next_ < forced_ids_.size() && token == forced_ids_[forced_next_]) ++forced_next_;
    else ++tokens_inside_;
    tail_.append(text);
    if (tail_.find(end_marker_) != std::string::npos || (forcing() && forced_next_ == forced_ids_.size())) {
        inside_ = false;
        tail_.clear();
        return;
    }
    // A marker completed later starts within its length of the end.
    if (tail_.size() > end_marker_.size()) tail_.erase(0, tail_.size() - end_marker_.size());
}

}  // namespace vllm
