// Lazily prepared experts (expert_preparation.h).
#include "model/expert_preparation.h"

#include "formats/model_source.h"
#include "model/weights.h"
#include "util/error.h"

namespace vllm {

namespace {

bool needs_preparation(const kernels::QuantMatrix& m) {
    return m.rows > 0 && kernels::matmul_layout(m).layout != m.layout;
}

}  // namespace

std::shared_ptr<LazyExperts> LazyExperts::create(const std::vector<kernels::QuantMatrix>& gate,
                                                 const std::vector<kernels::QuantMatrix>& up,
                                                 const std::vector<kernels::QuantMatrix>& down,
                                                 const ModelSource* file) {
    bool any = false;
    for (const auto* matrices : {&gate, &up, &down})
        for (const kernels::QuantMatrix& m : *matrices) any = any || needs_preparation(m);
    if (!any) return nullptr;
    return std::make_shared<LazyExperts>(gate, up, down, file);
}

LazyExperts::LazyExperts(std::vector<kernels::QuantMatrix> gate, std::vector<kernels::QuantMatrix> up,
                         std::vector<kernels::QuantMatrix> down, const ModelSource* file)
    : gate_(std::move(gate)), up_(std::move(up)), down_(std::move(down)), file_(file),
      ready_(new std::atomic<bool>[gate_.size()]) {
    for (size_t e = 0; e < gate_.size(); ++e) ready_[e].store(false, std::memory_order_relaxed);
    for (const auto* matrices : {&gate_, &up_, &down_})
        for (const kernels::QuantMatrix& m : *matrices)
            if (needs_preparation(m)) max_bytes_ += static_cast<size_t>(m.rows) * m.row_bytes;
}

PreparedExpertMemory prepared_expert_memory(const ModelWeights& weights) {
    PreparedExpertMemory memory;
    for (const LayerWeights& layer : weights.layers) {
        const LazyExperts* lazy = layer.lazy_experts.get();
        if (lazy == nullptr) continue;
        memory.experts += lazy->prepared_experts();
        memory.experts_total += lazy->experts();
        memory.bytes += static_cast<int64_t>(lazy->prepared_bytes());
        memory.max_bytes += static_cast<int64_t>(lazy->max_bytes());
    }
    return memory;
}

void LazyExperts::prepare(const int32_t* experts, int64_t n, ThreadPool& pool) {
    const auto all_ready = [&] {
        for (int64_t i = 0; i < n; ++i) {
            if (experts[i] < 0 || static_cast<size_t>(experts[i]) >= gate_.size())
                throw_runtime("internal error: a token was routed to a nonexistent expert");
            if (!ready_[experts[i]].load(std::memory_order_acquire)) return false;
        }
        return true;
    };
    if (all_ready()) return;  // the common case after the first steps: no lock
    std::lock_guard<std::mutex> lock(mutex_);
    // The matrices to write: each new expert's, its place in the arena and
    // the form the kernels read (decided per matrix, as at load).
    struct Job {
        kernels::QuantMatrix* matrix;
        kernels::QuantMatrix source, form;
        uint8_t* copy;
    };
    std::vector<Job> jobs;
    std::vector<int32_t> fresh;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t e = experts[i];
        if (ready_[e].load(std::memory_order_relaxed)) continue;
        bool listed = false;
        for (int32_t f : fresh) listed = listed || f == e;
        if (listed) continue;
        fresh.push_back(e);
        for (kernels::QuantMatrix* m : {&gate_[e], &up_[e], &down_[e]}) {
            if (!needs_preparation(*m)) continue;
            const size_t bytes = static_cast<size_t>(m->rows) * m->row_bytes;
            jobs.push_back({m, *m, kernels::matmul_layout(*m), arena_.allocate(bytes)});
            bytes_.fetch_add(bytes, std::memory_order_relaxed);
        }
    }
    // The arena's pages are fresh and zeroed, as write_matmul_layout needs.
    pool.for_each_chunk(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
        const Job& job = jobs[static_cast<size_t>(i)];
        kernels::write_matmul_layout(job.source, job.form, job.copy);
    });
    for (const Job& job : jobs) {
        *job.matrix = job.form;
        job.matrix->data = job.copy;
        if (file_ != nullptr) file_->release(job.source.data, static_cast<size_t>(job.source.rows) * job.source.row_bytes);
    }
    for (int32_t e : fresh) ready_[e].store(true, std::memory_order_release);
    prepared_.fetch_add(static_cast<int>(fresh.size()), std::memory_order_relaxed);
}

}  // namespace vllm
