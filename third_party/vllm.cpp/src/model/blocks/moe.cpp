#include "model/blocks/moe.h"

#include "model/blocks/activations.h"
#include "model/blocks/gated_mlp.h"
#include "model/blocks/norms.h"
#include "model/expert_preparation.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace vllm {

namespace {

// score[order[r]] for r < k become the softmax of those k (order[0] holds
// the largest).
void softmax_of_picked(float* score, const int32_t* order, int k) {
    const float max = score[order[0]];
    float sum = 0.0f;
    for (int r = 0; r < k; ++r) sum += score[order[r]] = std::exp(score[order[r]] - max);
    for (int r = 0; r < k; ++r) score[order[r]] /= sum;
}

// rows [first[e], first[e + 1]) of `rows` (each n floats) += bias + e * n,
// for every expert e: a bias per expert added to the rows routed to it.
void add_expert_bias(const float* bias, const std::vector<int64_t>& first, float* rows, int64_t n, ThreadPool& pool) {
    if (bias == nullptr) return;
    pool.parallel_for(
        first.back(),
        [&](int64_t begin, int64_t end) {
            // The expert of row `begin`: first[e] <= begin < first[e + 1].
            size_t e = std::upper_bound(first.begin(), first.end(), begin) - first.begin() - 1;
            for (int64_t row = begin; row < end; ++row) {
                while (row >= first[e + 1]) ++e;
                kernels::axpy_f32(1.0f, bias + e * n, rows + row * n, n);
            }
        },
        rows_per_chunk(n));
}

// Group-limited routing (ModelConfig::n_expert_groups): the scores of the
// experts outside the n_expert_groups_used best groups become 0 (every
// score is positive, so they are not picked while the kept groups hold k).
void keep_best_groups(const ModelConfig& c, float* score, std::vector<int32_t>& order) {
    const int per_group = c.n_experts / c.n_expert_groups, top = c.expert_group_score_top;
    std::vector<float> best(order.size()), members(static_cast<size_t>(per_group));
    for (size_t g = 0; g < order.size(); ++g) {
        std::copy_n(score + g * per_group, per_group, members.begin());
        std::partial_sort(members.begin(), members.begin() + top, members.end(), std::greater<float>());
        best[g] = 0.0f;
        for (int i = 0; i < top; ++i) best[g] += members[i];
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + c.n_expert_groups_used, order.end(),
                      [&](int32_t a, int32_t b) { return best[a] > best[b] || (best[a] == best[b] && a < b); });
    for (size_t r = c.n_expert_groups_used; r < order.size(); ++r)
        std::fill_n(score + order[r] * per_group, per_group, 0.0f);
}

template <typename T>
void grow(std::vector<T>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

}  // namespace

void route_tokens(const ModelConfig& c, float* logits, int64_t n_tokens, int32_t* picked, float* weights) {
    const int n = c.n_experts, k = c.n_experts_used;
    std::vector<int32_t> order(static_cast<size_t>(n)), groups(static_cast<size_t>(c.n_expert_groups));
    for (int64_t t = 0; t < n_tokens; ++t) {
        float* score = logits + t * n;
        if (c.traits.expert_gating == ExpertGating::SOFTMAX) {
            const float max = *std::max_element(score, score + n);
            float sum = 0.0f;
            for (int e = 0; e < n; ++e) sum += score[e] = std::exp(score[e] - max);
            for (int e = 0; e < n; ++e) score[e] /= sum;
        } else if (c.traits.expert_gating == ExpertGating::SIGMOID) {
            for (int e = 0; e < n; ++e) score[e] = sigmoid(score[e]);
        }  // SOFTMAX_OF_PICKED: the logits pick; their softmax below weights
        if (c.n_expert_groups > 1) keep_best_groups(c, score, groups);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
        if (c.traits.expert_gating == ExpertGating::SOFTMAX_OF_PICKED) softmax_of_picked(score, order.data(), k);
        float sum = 0.0f;
        for (int r = 0; r < k; ++r) sum += score[order[r]];
        // llama.cpp clamps the sum at the smallest normal half float.
        const float divisor = c.expert_weights_norm ? std::max(sum, 6.103515625e-5f) : 1.0f;
        for (int r = 0; r < k; ++r) {
            picked[t * k + r] = order[r];
            weights[t * k + r] = score[order[r]] / divisor * c.expert_weights_scale;
        }
    }
}

void grouped_expert_mlp(const ExpertMatrices& experts, FfnActivation activation, const float* x, int64_t n_tokens,
                        int k, const int32_t* picked, MoeScratch& s, ThreadPool& pool, const LoraSite* lora) {
    const int64_t n_experts = static_cast<int64_t>(experts.gate.size()), slots = n_tokens * k;
    if (slots <= 0) return;
    const int64_t dim = experts.gate[0].cols, ffn = experts.gate[0].rows;
    // Bucket the slots by expert (a counting sort: each expert's slots stay
    // in token order) and gather their rows of x in that order.
    std::vector<int64_t> first(static_cast<size_t>(n_experts + 1), 0);
    for (int64_t i = 0; i < slots; ++i) {
        const int32_t e = picked[i];
        if (e < 0 || e >= n_experts) throw_runtime("internal error: a token was routed to a nonexistent expert");
        ++first[e + 1];
    }
    for (int64_t e = 0; e < n_experts; ++e) first[e + 1] += first[e];
    grow(s.slots, slots);
    grow(s.row_of_slot, slots);
    {
        std::vector<int64_t> next(first.begin(), first.end() - 1);
        for (int64_t i = 0; i < slots; ++i) {
            s.row_of_slot[i] = next[picked[i]]++;
            s.slots[s.row_of_slot[i]] = i;
        }
    }
    grow(s.rows_in, slots * dim);
    grow(s.rows_out, slots * dim);
    grow(s.gate, slots * ffn);
    grow(s.up, slots * ffn);
    for (int64_t i = 0; i < slots; ++i) std::copy_n(x + s.slots[i] / k * dim, dim, s.rows_in.data() + i * dim);
    // Each routed expert's gate and up, then its down, as one grouped matmul
    // each; experts no token picked are not in the jobs and not read.
    std::vector<kernels::GroupedMatmul> gate_up, down;
    for (int64_t e = 0; e < n_experts; ++e) {
        const int64_t rows = first[e + 1] - first[e], at = first[e];
        if (rows == 0) continue;
        gate_up.push_back({&experts.gate[e], s.rows_in.data() + at * dim, rows, s.gate.data() + at * ffn});
        gate_up.push_back({&experts.up[e], s.rows_in.data() + at * dim, rows, s.up.data() + at * ffn});
        down.push_back({&experts.down[e], s.gate.data() + at * ffn, rows, s.rows_out.data() + at * dim});
    }
    kernels::matmul_grouped(gate_up, pool);
    const bool adapted = lora != nullptr && lora->batch != nullptr && batch_has_lora(*lora->batch);
    if (adapted) {  // each gathered row's token and expert, for the adapters' expert pairs
        grow(s.token_of_row, slots);
        grow(s.expert_of_row, slots);
        for (int64_t i = 0; i < slots; ++i) {
            s.token_of_row[i] = s.slots[i] / k;
            s.expert_of_row[i] = picked[s.slots[i]];
        }
        add_expert_lora(lora, LoraTarget::GATE, s.token_of_row.data(), s.expert_of_row.data(), slots,
                        s.rows_in.data(), dim, s.gate.data(), ffn, pool);
        add_expert_lora(lora, LoraTarget::UP, s.token_of_row.data(), s.expert_of_row.data(), slots,
                        s.rows_in.data(), dim, s.up.data(), ffn, pool);
    }
    add_expert_bias(experts.gate_bias, first, s.gate.data(), ffn, pool);
    add_expert_bias(experts.up_bias, first, s.up.data(), ffn, pool);
    gated_activation(activation, s.gate.data(), s.up.data(), slots * ffn, pool);
    kernels::matmul_grouped(down, pool);
    if (adapted)
        add_expert_lora(lora, LoraTarget::DOWN, s.token_of_row.data(), s.expert_of_row.data(), slots, s.gate.data(),
                        ffn, s.rows_out.data(), dim, pool);
    add_expert_bias(experts.down_bias, first, s.rows_out.data(), dim, pool);
}

void moe_mlp(const ModelConfig& c, const LayerWeights& w, const float* x, int64_t n_tokens, float* out, MoeScratch& s,
             ThreadPool& pool, const LoraSite* lora) {
    const int64_t dim = c.dim, k = c.n_experts_used;
    grow(s.logits, n_tokens * c.n_experts);
    grow(s.picked, n_tokens * k);
    grow(s.weights, n_tokens * k);
    kernels::matmul(w.router, x, n_tokens, s.logits.data(), pool);
    if (!w.router_bias.empty())
        for (int64_t t = 0; t < n_tokens; ++t)
            kernels::axpy_f32(1.0f, w.router_bias.data(), s.logits.data() + t * c.n_experts, c.n_experts);
    route_tokens(c, s.logits.data(), n_tokens, s.picked.data(), s.weights.data());
    const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
    // The routed experts in the kernels' layout, each prepared on its first
    // routing (every product with an expert then runs in that one layout).
    LazyExperts* lazy = w.lazy_experts.get();
    if (lazy != nullptr) lazy->prepare(s.picked.data(), n_tokens * k, pool);
    grouped_expert_mlp({lazy ? lazy->gate() : w.expert_gate, lazy ? lazy->up() : w.expert_up,
                        lazy ? lazy->down() : w.expert_down, bias(w.expert_gate_bias), bias(w.expert_up_bias),
                        bias(w.expert_down_bias)},
                       c.traits.ffn_activation, x, n_tokens, static_cast<int>(k), s.picked.data(), s, pool, lora);
    const bool shared = w.w_gate.rows > 0;
    if (shared) {
        grow(s.shared_out, n_tokens * dim);
        grow(s.gate, n_tokens * w.w_gate.rows);
        grow(s.up, n_tokens * w.w_gate.rows);
        gated_mlp(w.w_gate, w.w_up, w.w_down, c.traits.ffn_activation, x, n_tokens, s.gate.data(), s.up.data(),
                  s.shared_out.data(), pool, lora);  // the shared expert's adapter pairs (layers' GATE/UP/DOWN)
        s.shared_weight.assign(static_cast<size_t>(n_tokens), 1.0f);
        if (!w.shared_expert_gate.empty())  // Qwen2-MoE: sigmoid(w . x) per token
            for (int64_t t = 0; t < n_tokens; ++t)
                s.shared_weight[t] = sigmoid(kernels::dot_f32(w.shared_expert_gate.data(), x + t * dim, dim));
    }
    // Per token: the experts in rank order, then the shared expert (x may
    // alias out: every read of x is done).
    pool.parallel_for(
        n_tokens,
        [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) {
                float* y = out + t * dim;
                std::fill_n(y, dim, 0.0f);
                for (int64_t r = 0; r < k; ++r)
                    kernels::axpy_f32(s.weights[t * k + r], s.rows_out.data() + s.row_of_slot[t * k + r] * dim, y, dim);
                if (shared) kernels::axpy_f32(s.shared_weight[t], s.shared_out.data() + t * dim, y, dim);
            }
        },
        rows_per_chunk(dim * (k + 1)));
}

}  // namespace vllm
