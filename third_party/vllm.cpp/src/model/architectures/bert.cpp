// BERT's encoder (all-MiniLM, bge-small/base, e5; XLM-RoBERTa's too, which
// llama.cpp's `bert` holds): token + learned absolute position + token type
// embeddings (type 1 for a sentence pair's second segment) through a
// LayerNorm, then per layer bidirectional attention with biases, a residual
// add and a LayerNorm (attn_output_norm), a GELU MLP (erf GELU, as
// transformers' "gelu"), a residual add and a LayerNorm
// (layer_output_norm); no final norm: the last layer's rows are the hidden
// rows the pooler reads, and a cross-encoder's classification head (cls,
// cls.output) makes its labels' logits from the first of them.
//
// An encoder attends over its whole prompt, so every slice must be a
// request's whole prompt (start_pos 0): the engine schedules an encoder's
// pooling requests whole (SchedulerRequest::whole_prompt) and serves them
// only. Attention runs over the slice's own q/k/v rows; the KV cache is not
// read or written.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/activations.h"
#include "model/blocks/norms.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits bert_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/true, /*qk_norm=*/false, FfnActivation::SILU,
                         /*post_norms=*/false};
    t.output_bias = true;
    t.encoder = true;
    return t;
}

class BertEncoder final : public DecoderModel {
public:
    BertEncoder(ModelConfig config, ModelWeights weights) : config_(std::move(config)), weights_(std::move(weights)) {}

    const ModelConfig& config() const override { return config_; }
    void limit_logits(int64_t) override {}
    // A classification head's labels (a cross-encoder), else no logits.
    int64_t logit_count() const override { return weights_.classifier_out.rows; }

    void forward(const std::vector<SequenceSlice>& batch, KVCache&, ThreadPool& pool,
                 std::vector<float>& logits) override {
        const ModelConfig& c = config_;
        const int dim = c.dim;
        int64_t T = 0;
        for (const SequenceSlice& s : batch) {
            if (s.start_pos != 0 || s.num_logits > (logit_count() > 0 ? 1 : 0))
                throw_runtime("internal error: an encoder (" + c.architecture +
                              ") runs whole prompts only, pooled or classified");
            if (s.n_tokens > c.context_length)
                throw_runtime("internal error: a prompt of " + std::to_string(s.n_tokens) + " tokens exceeds " +
                              c.architecture + "'s " + std::to_string(c.context_length) + " positions");
            T += s.n_tokens;
        }
        x_.resize(T * dim);
        h_.resize(T * dim);
        q_.resize(T * dim);
        k_.resize(T * dim);
        v_.resize(T * dim);
        attn_.resize(T * dim);
        up_.resize(T * c.ffn_dim);
        embed(batch, pool);
        for (int l = 0; l < c.n_layers; ++l) layer(batch, l, T, pool);
        int64_t row = 0;
        logits.clear();
        for (const SequenceSlice& s : batch) {
            if (s.hidden_rows != nullptr)
                std::copy_n(x_.data() + row * dim, size_t(s.n_tokens) * dim, s.hidden_rows);
            if (s.num_logits == 1) classify(x_.data() + row * dim, logits, pool);
            row += s.n_tokens;
        }
    }

private:
    // x_ = LayerNorm(token + position + token type 0 embeddings).
    void embed(const std::vector<SequenceSlice>& batch, ThreadPool& pool) {
        const int dim = config_.dim;
        const kernels::QuantMatrix& tok = weights_.token_embedding;
        const kernels::QuantMatrix& pos = weights_.position_embedding;
        std::vector<float> position(dim);
        int64_t row = 0;
        for (const SequenceSlice& s : batch)
            for (int t = 0; t < s.n_tokens; ++t, ++row) {
                float* x = x_.data() + row * dim;
                kernels::dequantize_row(tok.type, tok.data + size_t(s.tokens[t]) * tok.row_bytes, x, dim);
                kernels::dequantize_row(pos.type, pos.data + size_t(t) * pos.row_bytes, position.data(), dim);
                const bool second = s.second_segment_start > 0 && t >= s.second_segment_start &&
                                    !weights_.token_type_second_row.empty();
                const std::vector<float>& type = second ? weights_.token_type_second_row : weights_.token_type_row;
                for (int i = 0; i < dim; ++i) x[i] += position[i] + type[i];
            }
        layer_norm_rows(x_.data(), weights_.embedding_norm.data(), weights_.embedding_norm_bias.data(), x_.data(), row,
                        dim, config_.rms_eps, pool);
    }

    void layer(const std::vector<SequenceSlice>& batch, int l, int64_t T, ThreadPool& pool) {
        const ModelConfig& c = config_;
        const LayerWeights& w = weights_.layers[l];
        const int dim = c.dim;
        kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, x_.data(), T, pool);
        add_bias_rows(q_.data(), w.bq, T);
        add_bias_rows(k_.data(), w.bk, T);
        add_bias_rows(v_.data(), w.bv, T);
        attend(batch, pool);
        kernels::matmul(w.wo, attn_.data(), T, h_.data(), pool);
        add_bias_rows(h_.data(), w.bo, T);
        for (int64_t i = 0; i < T * dim; ++i) x_[i] += h_[i];
        layer_norm_rows(x_.data(), w.attn_norm.data(), w.attn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
        kernels::matmul(w.w_up, x_.data(), T, up_.data(), pool);
        add_bias_rows(up_.data(), w.up_bias, T);
        for (float& u : up_) u = gelu_erf(u);
        kernels::matmul(w.w_down, up_.data(), T, h_.data(), pool);
        add_bias_rows(h_.data(), w.down_bias, T);
        for (int64_t i = 0; i < T * dim; ++i) x_[i] += h_[i];
        layer_norm_rows(x_.data(), w.ffn_norm.data(), w.ffn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
    }

    // The classification head on a prompt's first row (<s> / [CLS]), as
    // transformers' RobertaClassificationHead (dense, tanh, out_proj) and
    // BERT's pooler + classifier (the same shape) run it; its labels' logits
    // are appended to `logits`.
    void classify(const float* first_row, std::vector<float>& logits, ThreadPool& pool) {
        const ModelWeights& w = weights_;
        std::vector<float> pooled(first_row, first_row + config_.dim);
        if (w.classifier.data != nullptr) {
            std::vector<float> dense(config_.dim);
            kernels::matmul(w.classifier, pooled.data(), 1, dense.data(), pool);
            for (int i = 0; i < config_.dim; ++i) pooled[i] = std::tanh(dense[i] + w.classifier_bias[i]);
        }
        const size_t at = logits.size();
        logits.resize(at + w.classifier_out.rows);
        kernels::matmul(w.classifier_out, pooled.data(), 1, logits.data() + at, pool);
        for (int64_t i = 0; i < w.classifier_out.rows; ++i) logits[at + i] += w.classifier_out_bias[i];
    }

    // attn_ = softmax(q k^T * scale) v per head, each token over every
    // token of its own slice (no causal mask).
    // One job per (sequence, head) of the whole batch. The head's keys are
    // transposed first ([head_dim][n]), so a query's scores are built a
    // key row at a time (scores[j] += q[i] * kT[i][j]: contiguous in j, the
    // compiler's vector loop) instead of one dot product per key (a scalar
    // reduction it cannot vectorise); each score still sums over i in order,
    // so the values are the same. Each job reads only its own sequence.
    void attend(const std::vector<SequenceSlice>& batch, ThreadPool& pool) {
        const ModelConfig& c = config_;
        const int dim = c.dim, heads = c.n_heads, hd = c.head_dim;
        std::vector<int64_t> starts;
        int longest = 0;
        int64_t first = 0;
        for (const SequenceSlice& s : batch) {
            starts.push_back(first);
            first += s.n_tokens;
            longest = std::max(longest, s.n_tokens);
        }
        pool.parallel_for(int64_t(batch.size()) * heads, [&](int64_t begin, int64_t end) {
            std::vector<float> keys(size_t(hd) * longest), scores(longest);
            for (int64_t job = begin; job < end; ++job) {
                const int64_t base = starts[job / heads];
                const int n = batch[job / heads].n_tokens, h = static_cast<int>(job % heads);
                for (int j = 0; j < n; ++j) {
                    const float* k = k_.data() + (base + j) * dim + h * hd;
                    for (int i = 0; i < hd; ++i) keys[size_t(i) * n + j] = k[i];
                }
                for (int64_t t = base; t < base + n; ++t) {
                    const float* q = q_.data() + t * dim + h * hd;
                    std::fill_n(scores.data(), n, 0.0f);
                    for (int i = 0; i < hd; ++i) {
                        const float qi = q[i];
                        const float* row = keys.data() + size_t(i) * n;
                        for (int j = 0; j < n; ++j) scores[j] += qi * row[j];
                    }
                    float top = -INFINITY;
                    for (int j = 0; j < n; ++j) top = std::max(top, scores[j] *= c.attn_scale);
                    float sum = 0.0f;
                    for (int j = 0; j < n; ++j) sum += scores[j] = std::exp(scores[j] - top);
                    float* out = attn_.data() + t * dim + h * hd;
                    std::fill_n(out, hd, 0.0f);
                    for (int j = 0; j < n; ++j) {
                        const float* v = v_.data() + (base + j) * dim + h * hd;
                        const float p = scores[j] / sum;
                        for (int i = 0; i < hd; ++i) out[i] += p * v[i];
                    }
                }
            }
        });
    }

    ModelConfig config_;
    ModelWeights weights_;
    std::vector<float> x_, h_, q_, k_, v_, attn_, up_;
};

std::unique_ptr<DecoderModel> build_bert(ModelConfig config, ModelWeights weights, int) {
    if (config.n_kv_heads != config.n_heads || config.head_dim * config.n_heads != config.dim)
        throw_model_load(config.architecture + ": grouped or resized attention heads are not BERT's (head_count_kv " +
                         std::to_string(config.n_kv_heads) + ", key_length " + std::to_string(config.head_dim) + ")");
    return std::make_unique<BertEncoder>(std::move(config), std::move(weights));
}

}  // namespace

extern const Architecture kBertArchitecture = {"bert", bert_traits(), build_bert};

}  // namespace vllm
