#include "spec_decode/speculation_costs.h"

#include <algorithm>

namespace vllm {

void SpeculationCosts::update(double& average, int& samples, double seconds) {
    if (!(seconds > 0.0)) return;
    if (samples == 0) {
        average = seconds;
    } else {
        // A sample counts 1/8 (the first few more), clipped to within 2x of
        // the average so one preempted step cannot swing the decision.
        const double weight = 1.0 / std::min(samples + 1, 8);
        average += weight * (std::clamp(seconds, 0.5 * average, 2.0 * average) - average);
    }
    ++samples;
}

void SpeculationCosts::record_forward(int positions, double seconds) {
    if (positions < 1 || positions > kMaxPositions) return;
    update(forward_[positions], forward_samples_[positions], seconds);
}

void SpeculationCosts::record_draft(int steps, double seconds) {
    if (steps < 1) return;
    update(draft_, draft_samples_, seconds / steps);
}

std::optional<double> SpeculationCosts::forward_seconds(int positions) const {
    if (positions < 1 || positions > kMaxPositions) return std::nullopt;
    if (forward_samples_[positions] > 0) return forward_[positions];
    int below = positions - 1, above = positions + 1;
    while (below >= 1 && forward_samples_[below] == 0) --below;
    while (above <= kMaxPositions && forward_samples_[above] == 0) ++above;
    if (below < 1 || above > kMaxPositions) return std::nullopt;
    const double f = double(positions - below) / (above - below);
    return forward_[below] + f * (forward_[above] - forward_[below]);
}

std::vector<std::pair<int, double>> SpeculationCosts::measured_forwards() const {
    std::vector<std::pair<int, double>> measured;
    for (int positions = 1; positions <= kMaxPositions; ++positions)
        if (forward_samples_[positions] > 0) measured.emplace_back(positions, forward_[positions]);
    return measured;
}

std::optional<double> SpeculationCosts::draft_seconds() const {
    if (draft_samples_ == 0) return std::nullopt;
    return draft_;
}

}  // namespace vllm
