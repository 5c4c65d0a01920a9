// What speculation costs on this machine, measured while the engine runs:
// the wall time of a target forward by the number of positions it computes
// (1 for a lone decode, k + 1 for a verification of k drafts, the sum over
// a batch), and of one draft step (the draft model's forward of every
// speculating request; model-free proposers take microseconds). The
// speculation policy weighs these against the acceptance it measures.
//
// Why measured rather than configured: how much a forward of k + 1
// positions costs next to one of a single position depends on the weights'
// format, the kernels and the machine (on 4-bit weights 5 positions cost
// about 1.3 decodes; on F16 weights with AVX2 2.5 before the few-row tiles,
// 1.2-1.6 after; BENCHMARKS.md), and so does the draft.
//
// Each entry is a running average that a single outlier (a thread
// descheduled on a shared machine) moves by at most a factor of 2.
#pragma once
#include <optional>
#include <utility>
#include <vector>

namespace vllm {

class SpeculationCosts {
public:
    // Forwards of more positions are not recorded (prefill chunks: no
    // verification is that wide).
    static constexpr int kMaxPositions = 64;

    void record_forward(int positions, double seconds);
    // One draft step over the speculating requests (a propose call of `steps`
    // draft tokens per request takes `steps` of them).
    void record_draft(int steps, double seconds);

    // The expected seconds of a forward of `positions` (1..kMaxPositions):
    // the measured average, else a linear interpolation between the nearest
    // measured counts on either side; nothing when one side has none (no
    // extrapolation: a guess there would decide for or against speculating
    // on no evidence).
    std::optional<double> forward_seconds(int positions) const;
    // The seconds of one draft step; nothing before the first.
    std::optional<double> draft_seconds() const;
    // The forwards measured so far: (positions, average seconds), by positions.
    std::vector<std::pair<int, double>> measured_forwards() const;

private:
    static void update(double& average, int& samples, double seconds);
    std::vector<double> forward_ = std::vector<double>(kMaxPositions + 1, 0.0);
    std::vector<int> forward_samples_ = std::vector<int>(kMaxPositions + 1, 0);
    double draft_ = 0.0;
    int draft_samples_ = 0;
};

}  // namespace vllm
