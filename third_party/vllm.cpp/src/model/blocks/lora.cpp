// The LoRA shrink/expand beside a base matmul (lora.h).
#include "model/blocks/lora.h"

#include <algorithm>
#include <map>

#include "kernels/cpu/kernels.h"
#include "model/blocks/norms.h"

namespace vllm {

bool batch_has_lora(const std::vector<SequenceSlice>& batch) {
    return std::any_of(batch.begin(), batch.end(), [](const SequenceSlice& s) { return s.lora != nullptr; });
}

namespace {

// Expand's output columns per task: fixed block boundaries (multiples of
// this from column 0), so a token's columns always go through the same
// kernel calls whatever the batch (the SIMD body and its tail may round
// differently).
constexpr int64_t kExpandColumns = 256;

// One adapter's tokens (Punica's segment) and its pair for this projection.
struct Segment {
    const LoraMatrices* m;
    std::vector<int64_t> tokens;
};

}  // namespace

void add_lora(const std::vector<SequenceSlice>& batch, int layer, LoraTarget target, const float* x, float* out,
              ThreadPool& pool) {
    if (!batch_has_lora(batch)) return;
    // The batch's tokens grouped by adapter, so that each adapter's A and B
    // are read once per step for all its tokens (not once per token).
    std::map<const LoraAdapter*, Segment> by_adapter;
    int64_t t0 = 0;
    for (const SequenceSlice& s : batch) {
        const LoraMatrices* m = s.lora != nullptr ? s.lora->find(layer, target) : nullptr;
        if (m != nullptr) {
            Segment& seg = by_adapter[s.lora];
            seg.m = m;
            for (int i = 0; i < s.n_tokens; ++i) seg.tokens.push_back(t0 + i);
        }
        t0 += s.n_tokens;
    }
    if (by_adapter.empty()) return;
    std::vector<Segment> segments;
    for (auto& entry : by_adapter) segments.push_back(std::move(entry.second));

    // Shrink: shrunk[t][r] = A[r] . x[t], one task per (segment, rank row).
    std::vector<int64_t> shrunk_at(segments.size() + 1, 0);
    std::vector<std::pair<size_t, int>> shrink_tasks;
    for (size_t g = 0; g < segments.size(); ++g) {
        const Segment& seg = segments[g];
        shrunk_at[g + 1] = shrunk_at[g] + int64_t(seg.tokens.size()) * seg.m->rank;
        for (int r = 0; r < seg.m->rank; ++r) shrink_tasks.emplace_back(g, r);
    }
    std::vector<float> shrunk(static_cast<size_t>(shrunk_at.back()));
    const LoraMatrices& first = *segments.front().m;
    const int64_t tokens_per_task = int64_t(segments.front().tokens.size());
    pool.parallel_for(
        static_cast<int64_t>(shrink_tasks.size()),
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const auto [g, r] = shrink_tasks[static_cast<size_t>(i)];
                const Segment& seg = segments[g];
                const float* a = seg.m->a.data() + int64_t(r) * seg.m->in;
                float* s = shrunk.data() + shrunk_at[g];
                for (size_t k = 0; k < seg.tokens.size(); ++k)
                    s[int64_t(k) * seg.m->rank + r] = kernels::dot_f32(a, x + seg.tokens[k] * seg.m->in, seg.m->in);
            }
        },
        rows_per_chunk(first.in * tokens_per_task));

    // Expand: out[t][cols] += sum_r shrunk[t][r] * B^T[r][cols], one task
    // per (segment, column block); each element's sum runs in rank order.
    std::vector<std::pair<size_t, int64_t>> expand_tasks;
    for (size_t g = 0; g < segments.size(); ++g)
        for (int64_t c = 0; c < segments[g].m->out; c += kExpandColumns) expand_tasks.emplace_back(g, c);
    pool.parallel_for(
        static_cast<int64_t>(expand_tasks.size()),
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const auto [g, c0] = expand_tasks[static_cast<size_t>(i)];
                const Segment& seg = segments[g];
                const LoraMatrices& m = *seg.m;
                const int64_t n = std::min(kExpandColumns, m.out - c0);
                const float* s = shrunk.data() + shrunk_at[g];
                for (int r = 0; r < m.rank; ++r) {
                    const float* b = m.b_scaled.data() + int64_t(r) * m.out + c0;
                    for (size_t k = 0; k < seg.tokens.size(); ++k)
                        kernels::axpy_f32(s[int64_t(k) * m.rank + r], b, out + seg.tokens[k] * m.out + c0, n);
                }
            }
        },
        rows_per_chunk(kExpandColumns * first.rank * tokens_per_task));
}

void add_expert_lora(const LoraSite* site, LoraTarget target, const int64_t* token_of_row,
                     const int32_t* expert_of_row, int64_t n_rows, const float* x, int64_t in, float* out,
                     int64_t out_width, ThreadPool& pool) {
    if (site == nullptr || site->batch == nullptr || !batch_has_lora(*site->batch)) return;
    std::vector<const LoraAdapter*> adapter_of_token;
    for (const SequenceSlice& s : *site->batch) adapter_of_token.insert(adapter_of_token.end(), s.n_tokens, s.lora);
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            std::vector<float> shrunk;
            for (int64_t i = begin; i < end; ++i) {
                const LoraAdapter* adapter = adapter_of_token[static_cast<size_t>(token_of_row[i])];
                const LoraMatrices* m = adapter ? adapter->find_expert(site->layer, expert_of_row[i], target) : nullptr;
                if (m == nullptr) continue;
                shrunk.resize(static_cast<size_t>(m->rank));
                for (int r = 0; r < m->rank; ++r) shrunk[r] = kernels::dot_f32(m->a.data() + int64_t(r) * in, x + i * in, in);
                for (int r = 0; r < m->rank; ++r)
                    kernels::axpy_f32(shrunk[r], m->b_scaled.data() + int64_t(r) * m->out, out + i * out_width, m->out);
            }
        },
        rows_per_chunk(in + out_width));
}

void add_lora(const LoraSite* site, LoraTarget target, const float* x, float* out, ThreadPool& pool) {
    if (site != nullptr && site->batch != nullptr) add_lora(*site->batch, site->layer, target, x, out, pool);
}

}  // namespace vllm
