// What speculation costs on this machine, measured while the engine runs:
// the wall time of a target forward by the sequences in it and the
// positions it computes (one sequence at 1 position: a lone decode; at
// k + 1: a verification of k drafts; n sequences: the sum over the batch),
// and of one draft step (the draft model's forward of every speculating
// request; model-free proposers take microseconds). The speculation policy
// weighs these against the acceptance it measures.
//
// By sequences as well as positions: n sequences decoding one token each
// cost more than one sequence verifying n - 1 drafts (each sequence reads
// its own context's KV, and a lone query is bound by memory where n
// queries of one sequence share it), so a batch that ran earlier (its
// requests finishing one by one) would otherwise pass its costs off as
// verification's: 3 sequences' forward measured 1.8 decodes where one
// sequence's 3 positions take about 1.2.
//
// Why measured rather than configured: how much a forward of k + 1
// positions costs next to one of a single position depends on the weights'
// format, the kernels and the machine (on 4-bit weights 5 positions cost
// about 1.3 decodes; on F16 weights with AVX2 2.5 before the few-row tiles,
// 1.2-1.6 after; BENCHMARKS.md), and so does the draft.
//
// Each entry is the median of its last kRecent samples. On a shared
// machine a step now and then takes 1.5-2x its usual time (a thread put
// aside, a neighbour's burst), and decode forwards are sampled in bursts
// (a paused request's steps), then not for hundreds of steps. The running
// average this replaced kept what a burst ended on: in one traced chat
// run, lone decodes of 6.0-6.9 ms ending with two of 10.7 and 11.4 left
// it at 8.8 ms for the rest of the run, where the median of the last 7
// says 6.6 (BENCHMARKS.md, "Thread pool shares, prefetch distances").
#pragma once
#include <array>
#include <optional>
#include <vector>

namespace vllm {

class SpeculationCosts {
public:
    // Forwards of more positions are not recorded (prefill chunks: no
    // verification is that wide).
    static constexpr int kMaxPositions = 64;

    // A forward of `sequences` (1..positions) computing `positions` in all.
    void record_forward(int sequences, int positions, double seconds);
    // One draft step over the speculating requests (a propose call of `steps`
    // draft tokens per request takes `steps` of them).
    void record_draft(int steps, double seconds);

    // The expected seconds of a forward of `sequences` computing
    // `positions` (1..kMaxPositions): the measured median, else a linear
    // interpolation between the nearest measured position counts of as many
    // sequences on either side; nothing when one side has none (no
    // extrapolation: a guess there would decide for or against speculating
    // on no evidence).
    std::optional<double> forward_seconds(int sequences, int positions) const;
    // The seconds of one draft step; nothing before the first.
    std::optional<double> draft_seconds() const;
    struct Measured {
        int sequences, positions;
        double seconds;
    };
    // The forwards measured so far, by sequences, then positions.
    std::vector<Measured> measured_forwards() const;

    // Samples an estimate is the median of.
    static constexpr int kRecent = 7;

private:
    // Whether the table keeps forwards of `sequences` computing `positions`.
    static bool tracked(int sequences, int positions) {
        return positions >= 1 && positions <= kMaxPositions && sequences >= 1 && sequences <= positions;
    }
    // The last kRecent samples of one cost (fewer until that many came).
    class Recent {
    public:
        void add(double seconds);
        bool empty() const { return count_ == 0; }
        double median() const;

    private:
        std::array<double, kRecent> samples_{};
        int count_ = 0, next_ = 0;
    };
    // [sequences][positions]; half of it (more sequences than positions) unused.
    static constexpr int kSlots = kMaxPositions + 1;
    std::vector<Recent> forward_ = std::vector<Recent>(kSlots * kSlots);
    Recent draft_;
};

}  // namespace vllm
