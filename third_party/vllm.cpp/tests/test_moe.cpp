// The mixture-of-experts block's own checks (model/blocks/moe.h), on the
// active kernel build (the Python suite runs it once per build this CPU
// has, VLLM_CPP_ISA): the router's scores, top-k order and renormalisation
// against a direct computation, and the grouped expert MLP against each
// (token, rank) pair run alone through the same gated MLP: bit for bit,
// since a row's matmul result does not depend on the rows beside it. The
// experts no token picks have no data at all, so reading one would crash.
// And kernels::matmul_grouped, the grouped matmul under it, against matmul().
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "dtype/half.h"
#include "kernels/cpu/kernels.h"
#include "model/blocks/gated_mlp.h"
#include "model/blocks/moe.h"
#include "model/expert_preparation.h"

using namespace vllm;
using kernels::QuantMatrix;

namespace {

// Random weights of order 1/sqrt(cols) in `type` (F32, F16 or Q8_0).
std::vector<uint8_t> random_weights(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::vector<uint8_t> out(ggml_row_bytes(type, cols) * rows);
    uint8_t* p = out.data();
    for (int64_t i = 0; i < rows * cols;) {
        if (type == GgmlType::F32) {
            const float v = normal(rng);
            std::memcpy(p, &v, 4), p += 4, ++i;
        } else if (type == GgmlType::F16) {
            const uint16_t h = float_to_half(normal(rng));
            std::memcpy(p, &h, 2), p += 2, ++i;
        } else {  // Q8_0: a half scale, then 32 signed bytes
            const uint16_t scale = float_to_half(0.02f + 0.01f * static_cast<float>(rng() % 4));
            std::memcpy(p, &scale, 2), p += 2;
            for (int j = 0; j < 32; ++j) *p++ = static_cast<uint8_t>(static_cast<int8_t>(rng() % 201 - 100));
            i += 32;
        }
    }
    return out;
}

void test_router() {
    ModelConfig c;
    c.n_experts = 6;
    c.n_experts_used = 3;
    const float logits[2][6] = {{0.5f, 2.0f, -1.0f, 2.0f, 0.1f, 1.5f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    for (ExpertGating gating : {ExpertGating::SOFTMAX, ExpertGating::SIGMOID})
        for (bool norm : {false, true}) {
            c.traits.expert_gating = gating;
            c.expert_weights_norm = norm;
            c.expert_weights_scale = norm ? 1.0f : 2.5f;
            std::vector<float> scores(&logits[0][0], &logits[0][0] + 12);
            int32_t picked[6];
            float weights[6];
            route_tokens(c, scores.data(), 2, picked, weights);
            const std::string what = std::string(gating == ExpertGating::SOFTMAX ? "softmax" : "sigmoid") +
                                     (norm ? " renormalised" : "");
            // Highest first; the tie between experts 1 and 3 (and token 1's
            // all-equal scores) goes to the lower id.
            check(picked[0] == 1 && picked[1] == 3 && picked[2] == 5, what + ": token 0's top 3 by score");
            check(picked[3] == 0 && picked[4] == 1 && picked[5] == 2, what + ": equal scores pick the lower ids");
            double expect[6], sum = 0.0, top = 0.0;
            for (int e = 0; e < 6; ++e) {
                expect[e] = gating == ExpertGating::SOFTMAX ? std::exp(double(logits[0][e])) : 1.0 / (1.0 + std::exp(-double(logits[0][e])));
                sum += expect[e];
            }
            if (gating == ExpertGating::SOFTMAX)
                for (double& v : expect) v /= sum;
            for (int r = 0; r < 3; ++r) top += expect[picked[r]];
            bool close = true;
            for (int r = 0; r < 3; ++r) {
                const double want = expect[picked[r]] / (norm ? top : 1.0) * c.expert_weights_scale;
                close = close && std::fabs(weights[r] - want) <= 1e-6 * std::max(1.0, want);
            }
            check(close, what + ": the picked experts' weights");
        }
}

// Group-limited routing (ModelConfig::n_expert_groups): 8 experts in 4
// groups of 2, the best 2 groups kept, top 3. Softmax scores rank as the
// logits do, so the groups and picks are read off the logits.
void test_group_limited_router() {
    ModelConfig c;
    c.n_experts = 8;
    c.n_experts_used = 3;
    c.n_expert_groups = 4;
    c.n_expert_groups_used = 2;
    // Groups {0,1} {2,3} {4,5} {6,7}: best members 3.0, 2.9, 2.8, 1.0;
    // best two summed 3.0, 5.6, 5.5, 2.0.
    const float logits[8] = {3.0f, -2.0f, 2.9f, 2.7f, 2.8f, 2.7f, 1.0f, 1.0f};
    for (int top : {1, 2}) {
        c.expert_group_score_top = top;
        std::vector<float> scores(logits, logits + 8);
        int32_t picked[3];
        float weights[3];
        route_tokens(c, scores.data(), 1, picked, weights);
        // By best member: groups 0 and 1 (experts 0-3) -> 0, 2, 3. By best
        // two: groups 1 and 2 (experts 2-5) -> 2, 4, 3 (the tie 3/5: lower id).
        const bool ok = top == 1 ? picked[0] == 0 && picked[1] == 2 && picked[2] == 3
                                 : picked[0] == 2 && picked[1] == 4 && picked[2] == 3;
        check(ok, "group-limited routing scored by the best " + std::to_string(top) + " of each group");
        double sum = 0.0;
        for (float l : logits) sum += std::exp(double(l));
        check(std::fabs(weights[0] - std::exp(double(logits[picked[0]])) / sum) < 1e-6,
              "group-limited routing keeps the picked experts' softmax scores over all experts");
    }
}

void test_grouped_matches_per_token(GgmlType type) {
    std::mt19937 rng(7);
    ThreadPool pool(2);
    const int64_t dim = 64, ffn = 96, n_experts = 8, k = 2, tokens = 13;
    std::vector<std::vector<uint8_t>> storage;
    std::vector<QuantMatrix> gate, up, down;
    // Token t picks experts (t % 5) and ((t * 3 + 1) % 5): experts 5-7 are
    // never picked and get no data.
    std::vector<int32_t> picked;
    for (int64_t t = 0; t < tokens; ++t) {
        picked.push_back(static_cast<int32_t>(t % 5));
        picked.push_back(static_cast<int32_t>((t * 3 + 1) % 5 == t % 5 ? (t + 1) % 5 : (t * 3 + 1) % 5));
    }
    const auto matrix = [&](int64_t e, int64_t rows, int64_t cols) {
        QuantMatrix m{type, nullptr, rows, cols, ggml_row_bytes(type, cols)};
        if (e < 5) {
            storage.push_back(random_weights(type, rows, cols, rng));
            m.data = storage.back().data();
        }
        return m;
    };
    for (int64_t e = 0; e < n_experts; ++e) {
        gate.push_back(matrix(e, ffn, dim));
        up.push_back(matrix(e, ffn, dim));
        down.push_back(matrix(e, dim, ffn));
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(tokens * dim);
    for (float& v : x) v = normal(rng);

    const std::string name = ggml_type_name(static_cast<uint32_t>(type));
    const auto check_grouped = [&](const std::vector<QuantMatrix>& gate, const std::vector<QuantMatrix>& up,
                                   const std::vector<QuantMatrix>& down, const std::string& what) {
        MoeScratch scratch;
        grouped_expert_mlp({gate, up, down}, FfnActivation::SILU, x.data(), tokens, k, picked.data(), scratch, pool);
        int differ = 0;
        std::vector<float> g(ffn), u(ffn), alone(dim);
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t r = 0; r < k; ++r) {
                const int32_t e = picked[t * k + r];
                gated_mlp(gate[e], up[e], down[e], FfnActivation::SILU, &x[t * dim], 1, g.data(), u.data(), alone.data(),
                          pool);
                differ += !std::equal(alone.begin(), alone.end(),
                                      scratch.rows_out.begin() + scratch.row_of_slot[t * k + r] * dim);
            }
        check(differ == 0, "grouped expert MLP equals each token alone, " + what + ": " + std::to_string(differ) + " differ");
    };
    check_grouped(gate, up, down, name + " (row layout)");
    // The experts as the kernels read them, prepared lazily: the first
    // token's routing prepares its experts only, the batch's the rest; the
    // unpicked experts (no data) are never touched. Every product then runs
    // in the prepared layout, alone or batched, bit for bit alike.
    const std::shared_ptr<LazyExperts> lazy = LazyExperts::create(gate, up, down, nullptr);
    if (lazy == nullptr) return;  // this build reads the row layout
    lazy->prepare(picked.data(), k, pool);
    check(lazy->prepared_experts() == 2, "the first token's routing prepares its two experts, " + name);
    lazy->prepare(picked.data(), tokens * k, pool);
    check(lazy->prepared_experts() == 5, "the batch's routing prepares the five picked experts, " + name);
    check(lazy->prepared_bytes() == 5 * (2 * gate[0].rows * gate[0].row_bytes + down[0].rows * down[0].row_bytes),
          "prepared bytes count the five experts' matrices, " + name);
    check(lazy->gate()[0].layout == kernels::WeightLayout::kInterleaved16 && lazy->gate()[5].data == nullptr,
          "a picked expert is in the kernels' layout, an unpicked one untouched, " + name);
    check_grouped(lazy->gate(), lazy->up(), lazy->down(), name + " (prepared lazily)");
}

// kernels::matmul_grouped itself: jobs of different types, sizes and token
// counts, two of them sharing x, one with no tokens, each equal bit for bit
// to its own matmul().
void test_matmul_grouped() {
    std::mt19937 rng(11);
    ThreadPool pool(2);
    struct Spec {
        GgmlType type;
        int64_t rows, cols, tokens;
        int x;  // which activations
    };
    const Spec specs[] = {{GgmlType::Q8_0, 48, 64, 5, 0}, {GgmlType::F16, 33, 64, 5, 0}, {GgmlType::Q8_0, 96, 128, 3, 1},
                          {GgmlType::F32, 7, 32, 9, 2},   {GgmlType::Q8_0, 16, 64, 0, 3}, {GgmlType::Q8_0, 40, 64, 5, 0}};
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::vector<float>> xs(4);
    for (auto& x : xs) {
        x.resize(9 * 128);
        for (float& v : x) v = normal(rng);
    }
    std::vector<std::vector<uint8_t>> storage;
    std::vector<QuantMatrix> matrices;
    for (const Spec& s : specs) {
        storage.push_back(random_weights(s.type, s.rows, s.cols, rng));
        matrices.push_back({s.type, storage.back().data(), s.rows, s.cols, ggml_row_bytes(s.type, s.cols)});
    }
    std::vector<std::vector<float>> grouped(std::size(specs)), alone(std::size(specs));
    std::vector<kernels::GroupedMatmul> jobs;
    for (size_t i = 0; i < std::size(specs); ++i) {
        grouped[i].assign(specs[i].rows * std::max<int64_t>(specs[i].tokens, 1), NAN);
        alone[i] = grouped[i];
        jobs.push_back({&matrices[i], xs[specs[i].x].data(), specs[i].tokens, grouped[i].data()});
    }
    kernels::matmul_grouped(jobs, pool);
    int differ = 0;
    for (size_t i = 0; i < std::size(specs); ++i) {
        if (specs[i].tokens > 0) kernels::matmul(matrices[i], xs[specs[i].x].data(), specs[i].tokens, alone[i].data(), pool);
        differ += !std::equal(alone[i].begin(), alone[i].end(), grouped[i].begin(),
                              [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); });
    }
    check(differ == 0, "matmul_grouped equals each job's own matmul: " + std::to_string(differ) + " jobs differ");
}

}  // namespace

int main() {
    std::printf("kernel build: %s\n", kernels::active_isa());
    test_router();
    test_group_limited_router();
    test_matmul_grouped();
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) test_grouped_matches_per_token(type);
    return report();
}
