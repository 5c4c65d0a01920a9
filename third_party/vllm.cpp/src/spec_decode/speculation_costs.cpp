#include "spec_decode/speculation_costs.h"

#include <algorithm>

namespace vllm {

void SpeculationCosts::Recent::add(double seconds) {
    if (!(seconds > 0.0)) return;
    samples_[next_] = seconds;
    next_ = (next_ + 1) % kRecent;
    count_ = std::min(count_ + 1, kRecent);
}

double SpeculationCosts::Recent::median() const {
    std::array<double, kRecent> sorted = samples_;
    std::sort(sorted.begin(), sorted.begin() + count_);
    // An even count (before kRecent samples came): the lower middle one.
    return sorted[(count_ - 1) / 2];
}

void SpeculationCosts::record_forward(int sequences, int positions, double seconds) {
    if (!tracked(sequences, positions)) return;
    forward_[sequences * kSlots + positions].add(seconds);
}

void SpeculationCosts::record_draft(int steps, double seconds) {
    if (steps < 1) return;
    draft_.add(seconds / steps);
}

std::optional<double> SpeculationCosts::forward_seconds(int sequences, int positions) const {
    if (!tracked(sequences, positions)) return std::nullopt;
    const Recent* row = &forward_[sequences * kSlots];
    if (!row[positions].empty()) return row[positions].median();
    int below = positions - 1, above = positions + 1;
    while (below >= sequences && row[below].empty()) --below;
    while (above <= kMaxPositions && row[above].empty()) ++above;
    if (below < sequences || above > kMaxPositions) return std::nullopt;
    const double f = double(positions - below) / (above - below);
    const double low = row[below].median(), high = row[above].median();
    return low + f * (high - low);
}

std::vector<SpeculationCosts::Measured> SpeculationCosts::measured_forwards() const {
    std::vector<Measured> measured;
    for (int sequences = 1; sequences <= kMaxPositions; ++sequences)
        for (int positions = sequences; positions <= kMaxPositions; ++positions)
            if (const Recent& r = forward_[sequences * kSlots + positions]; !r.empty())
                measured.push_back({sequences, positions, r.median()});
    return measured;
}

std::optional<double> SpeculationCosts::draft_seconds() const {
    if (draft_.empty()) return std::nullopt;
    return draft_.median();
}

}  // namespace vllm
