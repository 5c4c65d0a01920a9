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

void SpeculationCosts::record_forward(int sequences, int positions, double seconds) {
    if (positions < 1 || positions > kMaxPositions || sequences < 1 || sequences > positions) return;
    const int slot = sequences * kSlots + positions;
    update(forward_[slot], forward_samples_[slot], seconds);
}

void SpeculationCosts::record_draft(int steps, double seconds) {
    if (steps < 1) return;
    update(draft_, draft_samples_, seconds / steps);
}

std::optional<double> SpeculationCosts::forward_seconds(int sequences, int positions) const {
    if (positions < 1 || positions > kMaxPositions || sequences < 1 || sequences > positions) return std::nullopt;
    const double* average = &forward_[sequences * kSlots];
    const int* samples = &forward_samples_[sequences * kSlots];
    if (samples[positions] > 0) return average[positions];
    int below = positions - 1, above = positions + 1;
    while (below >= sequences && samples[below] == 0) --below;
    while (above <= kMaxPositions && samples[above] == 0) ++above;
    if (below < sequences || above > kMaxPositions) return std::nullopt;
    const double f = double(positions - below) / (above - below);
    return average[below] + f * (average[above] - average[below]);
}

std::vector<SpeculationCosts::Measured> SpeculationCosts::measured_forwards() const {
    std::vector<Measured> measured;
    for (int sequences = 1; sequences <= kMaxPositions; ++sequences)
        for (int positions = sequences; positions <= kMaxPositions; ++positions)
            if (const int slot = sequences * kSlots + positions; forward_samples_[slot] > 0)
                measured.push_back({sequences, positions, forward_[slot]});
    return measured;
}

std::optional<double> SpeculationCosts::draft_seconds() const {
    if (draft_samples_ == 0) return std::nullopt;
    return draft_;
}

}  // namespace vllm
