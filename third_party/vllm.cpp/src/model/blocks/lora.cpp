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

void add_lora(const std::vector<SequenceSlice>& batch, int layer, LoraTarget target, const float* x, float* out,
              ThreadPool& pool) {
    if (!batch_has_lora(batch)) return;
    // The tokens of each adapter (Punica's segments), adapter by adapter.
    struct Row { int64_t token; const LoraMatrices* m; };
    std::map<const LoraAdapter*, std::vector<int64_t>> tokens_of;
    int64_t t0 = 0;
    for (const SequenceSlice& s : batch) {
        if (s.lora != nullptr && s.lora->find(layer, target) != nullptr)
            for (int i = 0; i < s.n_tokens; ++i) tokens_of[s.lora].push_back(t0 + i);
        t0 += s.n_tokens;
    }
    std::vector<Row> rows;
    for (const auto& [adapter, tokens] : tokens_of)
        for (int64_t t : tokens) rows.push_back({t, adapter->find(layer, target)});
    if (rows.empty()) return;
    const LoraMatrices& first = *rows.front().m;
    pool.parallel_for(
        static_cast<int64_t>(rows.size()),
        [&](int64_t begin, int64_t end) {
            std::vector<float> shrunk;
            for (int64_t i = begin; i < end; ++i) {
                const LoraMatrices& m = *rows[static_cast<size_t>(i)].m;
                const int64_t t = rows[static_cast<size_t>(i)].token;
                const float* xt = x + t * m.in;
                float* yt = out + t * m.out;
                shrunk.resize(static_cast<size_t>(m.rank));
                for (int r = 0; r < m.rank; ++r) shrunk[r] = kernels::dot_f32(m.a.data() + int64_t(r) * m.in, xt, m.in);
                for (int r = 0; r < m.rank; ++r) kernels::axpy_f32(shrunk[r], m.b_scaled.data() + int64_t(r) * m.out, yt, m.out);
            }
        },
        rows_per_chunk(int64_t(first.rank) * (first.in + first.out)));
}

void add_lora(const LoraSite* site, LoraTarget target, const float* x, float* out, ThreadPool& pool) {
    if (site != nullptr && site->batch != nullptr) add_lora(*site->batch, site->layer, target, x, out, pool);
}

}  // namespace vllm
