#include "engine/reasoning_gate.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace vllm {

ReasoningGate::ReasoningGate(const SamplingConfig::ReasoningSection& section, const Tokenizer& tokenizer)
    : start_markers_(section.end_marker.empty() ? std::vector<std::string>() : section.start_markers),
      budget_(section.token_budget),
      inside_(!section.end_marker.empty() && start_markers_.empty()) {
    if (section.end_marker.empty()) return;
    end_markers_.push_back(section.end_marker);
    end_markers_.insert(end_markers_.end(), section.other_end_markers.begin(), section.other_end_markers.end());
    if (budget_ >= 0)
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
    if (!start_markers_.empty()) {
        // The token that opens the section is not counted; what follows it in its text is inside.
        if (opens(text)) ends();
        return;
    }
    if (!inside_) return;
    if (forcing() && forced_next_ < forced_ids_.size() && token == forced_ids_[forced_next_]) ++forced_next_;
    else ++tokens_inside_;
    tail_.append(text);
    if (ends() || (forcing() && forced_next_ == forced_ids_.size())) {
        inside_ = false;
        tail_.clear();
    }
}

bool ReasoningGate::opens(std::string_view text) {
    tail_.append(text);
    if (!take_marker(start_markers_)) return false;
    start_markers_.clear();
    inside_ = true;
    return true;
}

bool ReasoningGate::ends() {
    if (!take_marker(end_markers_)) return false;
    inside_ = false;
    tail_.clear();
    return true;
}

bool ReasoningGate::take_marker(const std::vector<std::string>& markers) {
    size_t longest = 0;
    for (const std::string& marker : markers) {
        const size_t at = tail_.find(marker);
        if (at != std::string::npos) {
            tail_.erase(0, at + marker.size());
            return true;
        }
        longest = std::max(longest, marker.size());
    }
    // A marker completed later starts within its length of the end.
    if (tail_.size() > longest) tail_.erase(0, tail_.size() - longest);
    return false;
}

}  // namespace vllm
