// Vision transformer layers on the CPU kernels: matmuls for the
// projections and for attention's two products, scalar code for the rest.
#include "vision/vit_blocks.h"

#include <algorithm>
#include <cmath>

#include "model/blocks/norms.h"
#include "vision/tower_weights.h"

namespace vllm {

void vit_gelu_tanh(float* x, int64_t n, ThreadPool& pool) {
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        const float c = 0.7978845608028654f;  // sqrt(2 / pi)
        for (int64_t i = begin; i < end; ++i) x[i] = 0.5f * x[i] * (1.0f + std::tanh(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
    }, 4096);
}

void vit_attention(const float* q, const float* k, const float* v, float* out, int64_t n, int heads, int head_dim,
                   ThreadPool& pool) {
    const int64_t width = int64_t(heads) * head_dim;
    const float scale = 1.0f / std::sqrt(float(head_dim));
    std::vector<float> qh(n * head_dim), kh(n * head_dim), vt(head_dim * n), scores(n * n), oh(n * head_dim);
    for (int h = 0; h < heads; ++h) {
        for (int64_t t = 0; t < n; ++t)
            for (int d = 0; d < head_dim; ++d) {
                qh[t * head_dim + d] = q[t * width + h * head_dim + d] * scale;
                kh[t * head_dim + d] = k[t * width + h * head_dim + d];
                vt[d * n + t] = v[t * width + h * head_dim + d];
            }
        // scores[t][s] = q_t . k_s: the keys as the matmul's weight rows.
        kernels::matmul(float_matrix(kh, n, head_dim), qh.data(), n, scores.data(), pool);
        pool.parallel_for(n, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) {
                float* row = scores.data() + t * n;
                const float top = *std::max_element(row, row + n);
                double sum = 0;
                for (int64_t s = 0; s < n; ++s) sum += (row[s] = std::exp(row[s] - top));
                const float inv = static_cast<float>(1.0 / sum);
                for (int64_t s = 0; s < n; ++s) row[s] *= inv;
            }
        }, 8);
        // oh[t][d] = sum_s p[t][s] v[s][d]: v transposed as the weight rows.
        kernels::matmul(float_matrix(vt, head_dim, n), scores.data(), n, oh.data(), pool);
        for (int64_t t = 0; t < n; ++t)
            std::copy_n(oh.data() + t * head_dim, head_dim, out + t * width + h * head_dim);
    }
}

void vit_layer(const VitLayer& w, float* x, int64_t n, int dim, int ffn_dim, int heads, float eps, ThreadPool& pool) {
    std::vector<float> h(n * dim), q(n * dim), k(n * dim), v(n * dim), attn(n * dim), up(n * ffn_dim);
    layer_norm_rows(x, w.ln1_w.data(), w.ln1_b.data(), h.data(), n, dim, eps, pool);
    kernels::matmul_shared({{&w.q, q.data()}, {&w.k, k.data()}, {&w.v, v.data()}}, h.data(), n, pool);
    add_bias_rows(q.data(), w.q_b, n);
    add_bias_rows(k.data(), w.k_b, n);
    add_bias_rows(v.data(), w.v_b, n);
    vit_attention(q.data(), k.data(), v.data(), attn.data(), n, heads, dim / heads, pool);
    kernels::matmul(w.o, attn.data(), n, h.data(), pool);
    add_bias_rows(h.data(), w.o_b, n);
    for (int64_t i = 0; i < n * dim; ++i) x[i] += h[i];
    layer_norm_rows(x, w.ln2_w.data(), w.ln2_b.data(), h.data(), n, dim, eps, pool);
    kernels::matmul(w.up, h.data(), n, up.data(), pool);
    add_bias_rows(up.data(), w.up_b, n);
    vit_gelu_tanh(up.data(), n * ffn_dim, pool);
    kernels::matmul(w.down, up.data(), n, h.data(), pool);
    add_bias_rows(h.data(), w.down_b, n);
    for (int64_t i = 0; i < n * dim; ++i) x[i] += h[i];
}

}  // namespace vllm
