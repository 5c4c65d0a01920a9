#include "model/blocks/delta_rule.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

float dot(const float* a, const float* b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

}  // namespace

void delta_rule_recurrent(const DeltaRuleRun& r, float* state) {
    std::vector<float> delta(static_cast<size_t>(r.dv));
    for (int64_t t = 0; t < r.n_tokens; ++t) {
        const float* q = r.q + t * r.qk_stride;
        const float* k = r.k + t * r.qk_stride;
        const float* v = r.v + t * r.v_stride;
        const float decay = std::exp(r.g[t * r.gb_stride]), beta = r.beta[t * r.gb_stride];
        // delta = beta (v - (decayed S)^T k), then S = decay S + k delta^T.
        for (int j = 0; j < r.dv; ++j) delta[j] = 0.0f;
        for (int i = 0; i < r.dk; ++i) {
            float* row = state + int64_t(i) * r.dv;
            for (int j = 0; j < r.dv; ++j) {
                row[j] *= decay;
                delta[j] += row[j] * k[i];
            }
        }
        for (int j = 0; j < r.dv; ++j) delta[j] = beta * (v[j] - delta[j]);
        float* out = r.out + t * r.out_stride;
        for (int j = 0; j < r.dv; ++j) out[j] = 0.0f;
        for (int i = 0; i < r.dk; ++i) {
            float* row = state + int64_t(i) * r.dv;
            for (int j = 0; j < r.dv; ++j) {
                row[j] += k[i] * delta[j];
                out[j] += row[j] * q[i];
            }
        }
    }
}

void delta_rule_chunked(const DeltaRuleRun& r, float* state, int chunk, std::vector<float>& scratch) {
    const int dk = r.dk, dv = r.dv;
    const int64_t C = chunk;
    // Per chunk: cumulative decay logs G [C], the strictly lower triangle A
    // [C][C], the new values U [C][dv] and decayed keys W [C][dk].
    scratch.resize(static_cast<size_t>(C + C * C + C * dv + C * dk));
    float* G = scratch.data();
    float* A = G + C;
    float* U = A + C * C;
    float* W = U + C * dv;
    for (int64_t t0 = 0; t0 < r.n_tokens; t0 += C) {
        const int64_t L = std::min<int64_t>(C, r.n_tokens - t0);
        auto q = [&](int64_t i) { return r.q + (t0 + i) * r.qk_stride; };
        auto k = [&](int64_t i) { return r.k + (t0 + i) * r.qk_stride; };
        auto beta = [&](int64_t i) { return r.beta[(t0 + i) * r.gb_stride]; };
        float cum = 0.0f;
        for (int64_t i = 0; i < L; ++i) G[i] = cum += r.g[(t0 + i) * r.gb_stride];
        // A[i][j] = beta_i (k_i . k_j) exp(G_i - G_j), j < i: the updates of
        // earlier tokens of the chunk that token i's delta sees through S.
        for (int64_t i = 0; i < L; ++i)
            for (int64_t j = 0; j < i; ++j) A[i * C + j] = beta(i) * dot(k(i), k(j), dk) * std::exp(G[i] - G[j]);
        // (I + A) U = beta v and (I + A) W = beta exp(G) k, by forward substitution.
        for (int64_t i = 0; i < L; ++i) {
            const float* v = r.v + (t0 + i) * r.v_stride;
            float* u = U + i * dv;
            float* w = W + i * dk;
            const float scale = beta(i) * std::exp(G[i]);
            for (int j = 0; j < dv; ++j) u[j] = beta(i) * v[j];
            for (int j = 0; j < dk; ++j) w[j] = scale * k(i)[j];
            for (int64_t m = 0; m < i; ++m) {
                const float a = A[i * C + m];
                for (int j = 0; j < dv; ++j) u[j] -= a * U[m * dv + j];
                for (int j = 0; j < dk; ++j) w[j] -= a * W[m * dk + j];
            }
        }
        // The new values net of what the state before the chunk predicts:
        // v_new_i = U_i - S^T W_i (after the solve, which reads U as solved).
        for (int64_t i = 0; i < L; ++i)
            for (int d = 0; d < dk; ++d) {
                const float* row = state + int64_t(d) * dv;
                const float wd = W[i * dk + d];
                for (int j = 0; j < dv; ++j) U[i * dv + j] -= wd * row[j];
            }
        // o_i = exp(G_i) S^T q_i + sum_{j <= i} (q_i . k_j) exp(G_i - G_j) v_new_j.
        for (int64_t i = 0; i < L; ++i) {
            float* out = r.out + (t0 + i) * r.out_stride;
            const float decay = std::exp(G[i]);
            for (int j = 0; j < dv; ++j) out[j] = 0.0f;
            for (int d = 0; d < dk; ++d) {
                const float qd = q(i)[d] * decay;
                const float* row = state + int64_t(d) * dv;
                for (int j = 0; j < dv; ++j) out[j] += qd * row[j];
            }
            for (int64_t m = 0; m <= i; ++m) {
                const float a = dot(q(i), k(m), dk) * std::exp(G[i] - G[m]);
                for (int j = 0; j < dv; ++j) out[j] += a * U[m * dv + j];
            }
        }
        // S = exp(G_last) S + sum_j exp(G_last - G_j) k_j v_new_j^T.
        const float last = G[L - 1], chunk_decay = std::exp(last);
        for (int d = 0; d < dk; ++d) {
            float* row = state + int64_t(d) * dv;
            for (int j = 0; j < dv; ++j) row[j] *= chunk_decay;
            for (int64_t m = 0; m < L; ++m) {
                const float a = k(m)[d] * std::exp(last - G[m]);
                for (int j = 0; j < dv; ++j) row[j] += a * U[m * dv + j];
            }
        }
    }
}

}  // namespace vllm
