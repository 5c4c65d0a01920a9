// nomic-bert (nomic-embed-text v1/v1.5; llama.cpp's `nomic-bert`): BERT's
// post-norm encoder (token + token type 0 embeddings through a LayerNorm,
// each sublayer's residual sum through a LayerNorm with bias) with RoPE
// over halves instead of learned positions, a fused qkv projection,
// bidirectional attention (blocks/bidirectional_attention.h, no window) and
// a SwiGLU MLP (blocks/gated_mlp.h), without biases (traits.encoder_rope:
// weights.cpp loads it on BERT's road). No final norm; pooling only, each
// prompt whole (traits.encoder).
#include <memory>
#include <string>

#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/attention_heads.h"
#include "model/blocks/bidirectional_attention.h"
#include "model/blocks/encoder_rows.h"
#include "model/blocks/gated_mlp.h"
#include "model/blocks/norms.h"
#include "model/blocks/rotary.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits nomic_bert_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU};
    t.encoder = true;
    t.encoder_rope = true;
    return t;
}

class NomicBertEncoder final : public DecoderModel {
public:
    NomicBertEncoder(ModelConfig config, ModelWeights weights, int max_model_len)
        : config_(std::move(config)), weights_(std::move(weights)) {
        rope_ = RotaryAngles::global(config_, weights_, max_model_len);
    }

    const ModelConfig& config() const override { return config_; }
    void limit_logits(int64_t) override {}
    int64_t logit_count() const override { return 0; }

    void forward(const std::vector<SequenceSlice>& batch, KVCache&, ThreadPool& pool,
                 std::vector<float>& logits) override {
        const ModelConfig& c = config_;
        const int64_t dim = c.dim;
        whole_prompt_positions(c, batch, positions_);
        const int64_t T = static_cast<int64_t>(positions_.size());
        x_.resize(T * dim);
        h_.resize(T * dim);
        q_.resize(T * dim);
        k_.resize(T * dim);
        v_.resize(T * dim);
        attn_.resize(T * dim);
        gate_.resize(T * c.ffn_dim);
        up_.resize(T * c.ffn_dim);
        rope_.fill(positions_);
        embed_with_token_type(weights_, batch, c.dim, c.rms_eps, x_.data(), pool);
        for (int l = 0; l < c.n_layers; ++l) layer(batch, l, T, pool);
        copy_hidden_rows(batch, x_.data(), c.dim);
        logits.clear();
    }

private:
    void layer(const std::vector<SequenceSlice>& batch, int l, int64_t T, ThreadPool& pool) {
        const ModelConfig& c = config_;
        const LayerWeights& w = weights_.layers[l];
        const int64_t dim = c.dim;
        kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, x_.data(), T, pool);
        finish_attention_heads(c, w, rope_, true, T, q_.data(), k_.data(), v_.data(), pool);
        bidirectional_attention(c, batch, l, q_.data(), k_.data(), v_.data(), attn_.data(), pool);
        kernels::matmul(w.wo, attn_.data(), T, h_.data(), pool);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
        layer_norm_rows(x_.data(), w.attn_norm.data(), w.attn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
        gated_mlp(w.w_gate, w.w_up, w.w_down, FfnActivation::SILU, x_.data(), T, gate_.data(), up_.data(), h_.data(),
                  pool);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
        layer_norm_rows(x_.data(), w.ffn_norm.data(), w.ffn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
    }

    ModelConfig config_;
    ModelWeights weights_;
    RotaryAngles rope_;
    std::vector<int32_t> positions_;
    std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_;
};

std::unique_ptr<DecoderModel> build_nomic_bert(ModelConfig config, ModelWeights weights, int max_model_len) {
    if (config.n_kv_heads != config.n_heads || config.head_dim * config.n_heads != config.dim)
        throw_model_load(config.architecture + ": grouped or resized attention heads are not nomic-bert's");
    return std::make_unique<NomicBertEncoder>(std::move(config), std::move(weights), max_model_len);
}

}  // namespace

extern const Architecture kNomicBertArchitecture = {"nomic-bert", nomic_bert_traits(), build_nomic_bert};

}  // namespace vllm
