#include "model/llama.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

void rms_norm(const float* x, const float* weight, float* out, int n, float eps) {
    float sum = kernels::dot_f32(x, x, n);
    float scale = 1.0f / std::sqrt(sum / n + eps);
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void add_bias(float* rows, const std::vector<float>& bias, int64_t n_rows) {
    const size_t n = bias.size();
    for (int64_t r = 0; r < n_rows; ++r)
        for (size_t i = 0; i < n; ++i) rows[r * n + i] += bias[i];
}

}  // namespace

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights)
    : config_(std::move(config)), weights_(std::move(weights)) {
    const int pairs = config_.rope_dim / 2;
    inv_freq_.resize(pairs);
    for (int i = 0; i < pairs; ++i)
        inv_freq_[i] = static_cast<float>(std::pow(double(config_.rope_theta), -2.0 * i / config_.rope_dim));
}

void LlamaModel::rope(float* vectors, int n_heads, ThreadPool& pool) {
    const int hd = config_.head_dim, pairs = config_.rope_dim / 2;
    const int64_t n_tokens = static_cast<int64_t>(positions_.size());
    const bool halves = config_.rope_style == RopeStyle::HALVES;
    pool.parallel_for(n_tokens * n_heads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t t = i / n_heads;
            float* v = vectors + i * hd;
            const float* c = &rope_cos_[t * pairs];
            const float* s = &rope_sin_[t * pairs];
            for (int p = 0; p < pairs; ++p) {
                // HALVES pairs element p with p + rope_dim/2; ADJACENT with 2p+1.
                float* a = halves ? v + p : v + 2 * p;
                float* b = halves ? v + p + pairs : v + 2 * p + 1;
                const float x0 = *a, x1 = *b;
                *a = x0 * c[p] - x1 * s[p];
                *b = x0 * s[p] + x1 * c[p];
            }
        }
    });
}

void LlamaModel::attention(const std::vector<SequenceSlice>& batch, int layer, KVCache& cache, ThreadPool& pool) {
    const int hd = config_.head_dim, n_heads = config_.n_heads, group = config_.n_heads / config_.n_kv_heads;
    const int kv_dim = config_.n_kv_heads * hd, bs = cache.block_size();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

    // Which slice each batch token belongs to, for the parallel loop.
    std::vector<int> token_slice;
    token_slice.reserve(positions_.size());
    for (size_t s = 0; s < batch.size(); ++s) token_slice.insert(token_slice.end(), batch[s].n_tokens, static_cast<int>(s));

    // Store this step's K/V first: a token attends to every earlier token of
    // its sequence, including those in this very batch.
    for (size_t t = 0; t < positions_.size(); ++t) {
        const SequenceSlice& sl = batch[token_slice[t]];
        const int pos = positions_[t];
        const int32_t block = sl.block_table[pos / bs];
        std::copy_n(&k_[t * kv_dim], kv_dim, cache.key(layer, block, pos % bs));
        std::copy_n(&v_[t * kv_dim], kv_dim, cache.value(layer, block, pos % bs));
    }

    const int64_t items = static_cast<int64_t>(positions_.size()) * n_heads;
    pool.parallel_for(items, [&](int64_t begin, int64_t end) {
        std::vector<float> scores;
        for (int64_t i = begin; i < end; ++i) {
            const int64_t t = i / n_heads;
            const int h = static_cast<int>(i % n_heads);
            const int kv_off = (h / group) * hd;
            const SequenceSlice& sl = batch[token_slice[t]];
            const int n_ctx = positions_[t] + 1;
            const float* q = &q_[(t * n_heads + h) * hd];
            scores.resize(n_ctx);
            float max_score = -INFINITY;
            for (int j = 0; j < n_ctx; ++j) {
                const float* key = cache.key(layer, sl.block_table[j / bs], j % bs) + kv_off;
                scores[j] = kernels::dot_f32(q, key, hd) * scale;
                max_score = std::max(max_score, scores[j]);
            }
            float total = 0.0f;
            for (int j = 0; j < n_ctx; ++j) {
                scores[j] = std::exp(scores[j] - max_score);
                total += scores[j];
            }
            float* out = &attn_[(t * n_heads + h) * hd];
            std::fill_n(out, hd, 0.0f);
            const float inv_total = 1.0f / total;
            for (int j = 0; j < n_ctx; ++j) {
                const float* value = cache.value(layer, sl.block_table[j / bs], j % bs) + kv_off;
                kernels::axpy_f32(scores[j] * inv_total, value, out, hd);
            }
        }
    });
}

void LlamaModel::forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                         std::vector<float>& logits) {
    const ModelConfig& c = config_;
    const int dim = c.dim, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
    const int pairs = c.rope_dim / 2;

    positions_.clear();
    std::vector<int32_t> tokens;
    for (const SequenceSlice& s : batch)
        for (int i = 0; i < s.n_tokens; ++i) {
            tokens.push_back(s.tokens[i]);
            positions_.push_back(s.start_pos + i);
        }
    const int64_t T = static_cast<int64_t>(tokens.size());
    x_.resize(T * dim);
    xn_.resize(T * dim);
    q_.resize(T * q_dim);
    k_.resize(T * kv_dim);
    v_.resize(T * kv_dim);
    attn_.resize(T * q_dim);
    gate_.resize(T * c.ffn_dim);
    up_.resize(T * c.ffn_dim);

    rope_cos_.resize(T * pairs);
    rope_sin_.resize(T * pairs);
    for (int64_t t = 0; t < T; ++t)
        for (int p = 0; p < pairs; ++p) {
            const float angle = positions_[t] * inv_freq_[p];
            rope_cos_[t * pairs + p] = std::cos(angle);
            rope_sin_[t * pairs + p] = std::sin(angle);
        }

    const kernels::QuantMatrix& embd = weights_.token_embedding;
    for (int64_t t = 0; t < T; ++t)
        kernels::dequantize_row(embd.type, embd.data + size_t(tokens[t]) * embd.row_bytes, &x_[t * dim], dim);

    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& w = weights_.layers[l];
        for (int64_t t = 0; t < T; ++t) rms_norm(&x_[t * dim], w.attn_norm.data(), &xn_[t * dim], dim, c.rms_eps);
        kernels::matmul(w.wq, xn_.data(), T, q_.data(), pool);
        kernels::matmul(w.wk, xn_.data(), T, k_.data(), pool);
        kernels::matmul(w.wv, xn_.data(), T, v_.data(), pool);
        if (c.qkv_bias) {
            add_bias(q_.data(), w.bq, T);
            add_bias(k_.data(), w.bk, T);
            add_bias(v_.data(), w.bv, T);
        }
        if (c.qk_norm) {
            for (int64_t i = 0; i < T * c.n_heads; ++i) rms_norm(&q_[i * hd], w.q_norm.data(), &q_[i * hd], hd, c.rms_eps);
            for (int64_t i = 0; i < T * c.n_kv_heads; ++i) rms_norm(&k_[i * hd], w.k_norm.data(), &k_[i * hd], hd, c.rms_eps);
        }
        rope(q_.data(), c.n_heads, pool);
        rope(k_.data(), c.n_kv_heads, pool);
        attention(batch, l, cache, pool);
        // Residual adds go through xn_ as the matmul output.
        kernels::matmul(w.wo, attn_.data(), T, xn_.data(), pool);
        for (int64_t i = 0; i < T * dim; ++i) x_[i] += xn_[i];

        for (int64_t t = 0; t < T; ++t) rms_norm(&x_[t * dim], w.ffn_norm.data(), &xn_[t * dim], dim, c.rms_eps);
        kernels::matmul(w.w_gate, xn_.data(), T, gate_.data(), pool);
        kernels::matmul(w.w_up, xn_.data(), T, up_.data(), pool);
        for (int64_t i = 0; i < T * c.ffn_dim; ++i) {
            const float g = gate_[i];
            gate_[i] = g / (1.0f + std::exp(-g)) * up_[i];  // SiLU(gate) * up
        }
        kernels::matmul(w.w_down, gate_.data(), T, xn_.data(), pool);
        for (int64_t i = 0; i < T * dim; ++i) x_[i] += xn_[i];
    }

    // Final norm and output projection only for the rows whose logits are wanted.
    std::vector<float> last;
    int64_t row = 0, n_out = 0;
    for (const SequenceSlice& s : batch) {
        row += s.n_tokens;
        if (!s.want_logits) continue;
        last.resize((n_out + 1) * dim);
        rms_norm(&x_[(row - 1) * dim], weights_.output_norm.data(), &last[n_out * dim], dim, c.rms_eps);
        ++n_out;
    }
    logits.resize(n_out * c.vocab_size);
    if (n_out > 0) kernels::matmul(weights_.output, last.data(), n_out, logits.data(), pool);
}

}  // namespace vllm
