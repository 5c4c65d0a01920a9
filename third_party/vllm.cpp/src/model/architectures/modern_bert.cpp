// ModernBERT's encoder (llama.cpp's `modern-bert`; transformers'
// ModernBertModel): token embeddings through a LayerNorm, then pre-norm
// layers (the first without an attention norm) of fused-qkv attention with
// RoPE over halves, bidirectional (blocks/bidirectional_attention.h: a
// global layer every n-th from layer 0, the others within half the local
// window on each side, with their own RoPE base), and a GeGLU MLP with erf
// GELU (transformers' "gelu"; the fused up projection's first half is the
// gate), and a final LayerNorm; LayerNorms without bias, no biases anywhere.
// Its tensors load as a decoder's (traits.decoder_layers); each prompt runs
// whole, pooling only (traits.encoder).
#include <cmath>
#include <memory>
#include <string>

#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/activations.h"
#include "model/blocks/attention_heads.h"
#include "model/blocks/bidirectional_attention.h"
#include "model/blocks/embedding.h"
#include "model/blocks/norms.h"
#include "model/blocks/rotary.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits modern_bert_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::GELU_TANH,
                         /*post_norms=*/false, /*sliding_window=*/true, /*sliding_pattern=*/3,
                         /*rope_theta_sliding=*/10000.0f};
    t.encoder = true;
    t.decoder_layers = true;
    t.global_layers_first = true;
    return t;
}

class ModernBertEncoder final : public DecoderModel {
public:
    ModernBertEncoder(ModelConfig config, ModelWeights weights, int max_model_len)
        : config_(std::move(config)), weights_(std::move(weights)) {
        rope_ = RotaryAngles::global(config_, weights_, max_model_len);
        rope_sliding_ = RotaryAngles::sliding(config_);
    }

    const ModelConfig& config() const override { return config_; }
    void limit_logits(int64_t) override {}
    int64_t logit_count() const override { return 0; }

    void forward(const std::vector<SequenceSlice>& batch, KVCache&, ThreadPool& pool,
                 std::vector<float>& logits) override {
        const ModelConfig& c = config_;
        whole_prompt_positions(c, batch, positions_);
        tokens_.clear();
        for (const SequenceSlice& s : batch) tokens_.insert(tokens_.end(), s.tokens, s.tokens + s.n_tokens);
        const int64_t T = static_cast<int64_t>(tokens_.size()), dim = c.dim;
        x_.resize(T * dim);
        h_.resize(T * dim);
        q_.resize(T * dim);
        k_.resize(T * dim);
        v_.resize(T * dim);
        attn_.resize(T * dim);
        gate_.resize(T * c.ffn_dim);
        up_.resize(T * c.ffn_dim);
        rope_.fill(positions_);
        rope_sliding_.fill(positions_);
        embed_tokens(weights_.token_embedding, tokens_, c.dim, x_.data());
        layer_norm_rows(x_.data(), weights_.embedding_norm.data(), nullptr, x_.data(), T, dim, c.rms_eps, pool);
        for (int l = 0; l < c.n_layers; ++l) layer(batch, l, T, pool);
        int64_t row = 0;
        for (const SequenceSlice& s : batch) {
            if (s.hidden_rows != nullptr)
                layer_norm_rows(x_.data() + row * dim, weights_.output_norm.data(), nullptr, s.hidden_rows, s.n_tokens,
                                dim, c.rms_eps, pool);
            row += s.n_tokens;
        }
        logits.clear();
    }

private:
    void layer(const std::vector<SequenceSlice>& batch, int l, int64_t T, ThreadPool& pool) {
        const ModelConfig& c = config_;
        const LayerWeights& w = weights_.layers[l];
        const int64_t dim = c.dim;
        if (w.attn_norm.empty())
            std::copy(x_.begin(), x_.end(), h_.begin());
        else
            layer_norm_rows(x_.data(), w.attn_norm.data(), nullptr, h_.data(), T, dim, c.rms_eps, pool);
        kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, h_.data(), T, pool);
        finish_attention_heads(c, w, c.is_sliding(l) ? rope_sliding_ : rope_, true, T, q_.data(), k_.data(), v_.data(),
                               pool);
        bidirectional_attention(c, batch, l, q_.data(), k_.data(), v_.data(), attn_.data(), pool);
        kernels::matmul(w.wo, attn_.data(), T, h_.data(), pool);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
        layer_norm_rows(x_.data(), w.ffn_norm.data(), nullptr, h_.data(), T, dim, c.rms_eps, pool);
        kernels::matmul_shared({{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}}, h_.data(), T, pool);
        for (size_t i = 0; i < gate_.size(); ++i)
            gate_[i] = gelu_erf(gate_[i]) * up_[i];
        kernels::matmul(w.w_down, gate_.data(), T, h_.data(), pool);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
    }

    ModelConfig config_;
    ModelWeights weights_;
    RotaryAngles rope_, rope_sliding_;  // the global layers', the sliding layers'
    std::vector<int32_t> tokens_, positions_;
    std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_;
};

std::unique_ptr<DecoderModel> build_modern_bert(ModelConfig config, ModelWeights weights, int max_model_len) {
    const auto refuse = [&](const std::string& why) { throw_model_load(config.architecture + ": " + why); };
    if (config.n_kv_heads != config.n_heads || config.head_dim * config.n_heads != config.dim)
        refuse("grouped or resized attention heads are not ModernBERT's");
    if (weights.embedding_norm.empty()) refuse("tensor 'token_embd_norm.weight' (the embedding norm) is missing");
    if (weights.layers.empty() || weights.layers[0].w_gate.rows == 0)
        refuse("a separate ffn_gate is not ModernBERT's (its gate and up are one ffn_up)");
    return std::make_unique<ModernBertEncoder>(std::move(config), std::move(weights), max_model_len);
}

}  // namespace

extern const Architecture kModernBertArchitecture = {"modern-bert", modern_bert_traits(), build_modern_bert};

}  // namespace vllm
