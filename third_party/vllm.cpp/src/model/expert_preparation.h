// A mixture-of-experts layer's experts in the layout the matmul kernels
// read (kernels::matmul_layout: the interleaved tiles, about 2.3x faster in
// prefill and 1.7x in decode than the file's rows), prepared lazily: an
// expert is copied into huge pages in that layout the first time a token
// routes to it, before any matmul reads it. So
// - every product with an expert runs in the one layout: a token's result
//   does not depend on which requests routed there first (batch
//   invariance; the row and interleaved kernels differ in rounding);
// - an expert no token routes to is never read or copied (the load stays a
//   mapping for the experts, which are most of a MoE file);
// - a prepared expert's file pages are released, so resident memory stays
//   about the file's size.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "util/huge_pages.h"
#include "util/thread_pool.h"

namespace vllm {

class ModelSource;

class LazyExperts {
public:
    // The experts' matrices as views of `file` (row layout); `file` must
    // outlive this (null: the matrices are not a file's, nothing is
    // released). Null when the kernels read every one of them in the row
    // layout (nothing to prepare: the experts are used in place).
    static std::shared_ptr<LazyExperts> create(const std::vector<kernels::QuantMatrix>& gate,
                                               const std::vector<kernels::QuantMatrix>& up,
                                               const std::vector<kernels::QuantMatrix>& down, const ModelSource* file);

    // Prepares each expert of `experts` (n ids, repeats allowed) that is not
    // yet; the copies are written on `pool`. Safe to call from several
    // threads: an expert is prepared once, and a prepared expert's matrices
    // never change.
    void prepare(const int32_t* experts, int64_t n, ThreadPool& pool);

    // Every expert's matrices: the prepared ones in the kernels' layout, the
    // others still the file's rows (read only once prepare() ran for them).
    const std::vector<kernels::QuantMatrix>& gate() const { return gate_; }
    const std::vector<kernels::QuantMatrix>& up() const { return up_; }
    const std::vector<kernels::QuantMatrix>& down() const { return down_; }

    // Bytes of prepared copies so far (the memory this layer's experts took
    // beyond the mapping) and how many experts they hold.
    size_t prepared_bytes() const { return bytes_.load(std::memory_order_relaxed); }
    int prepared_experts() const { return prepared_.load(std::memory_order_relaxed); }
    // The most the copies can take (every expert routed): the bytes of the
    // experts' matrices in the file, whose pages are released as their
    // copies are written, so copies and file pages together stay about
    // the file's size.
    size_t max_bytes() const { return max_bytes_; }
    int experts() const { return static_cast<int>(gate_.size()); }

    LazyExperts(std::vector<kernels::QuantMatrix> gate, std::vector<kernels::QuantMatrix> up,
                std::vector<kernels::QuantMatrix> down, const ModelSource* file);

private:
    std::vector<kernels::QuantMatrix> gate_, up_, down_;
    const ModelSource* file_;
    std::unique_ptr<std::atomic<bool>[]> ready_;
    std::mutex mutex_;  // held while preparing: the arena and the ready flags' writers
    HugePageArena arena_;
    std::atomic<size_t> bytes_{0};
    std::atomic<int> prepared_{0};
    size_t max_bytes_ = 0;
};

// A model's lazily prepared experts, all layers together (engine stats'
// prepared_experts): experts prepared so far and their copies' bytes, and
// the most they can reach. All zero for a model without them.
struct PreparedExpertMemory {
    int64_t experts = 0, experts_total = 0;
    int64_t bytes = 0, max_bytes = 0;
};
PreparedExpertMemory prepared_expert_memory(const struct ModelWeights& weights);

}  // namespace vllm
