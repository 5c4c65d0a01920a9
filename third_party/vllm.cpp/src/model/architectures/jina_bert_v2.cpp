// jina-bert-v2 (jina-embeddings-v2; llama.cpp's `jina-bert-v2`): BERT's
// post-norm encoder (token + token type 0 embeddings through a LayerNorm;
// q/k/v and output projections with biases; each sublayer's residual sum
// through a LayerNorm with bias) without learned positions: ALiBi instead
// (blocks/bidirectional_attention.h, symmetric, llama.cpp's maximum bias 8),
// and a GEGLU MLP (erf GELU, transformers' "gelu"; the fused gated_layers'
// first half is the gate) whose down projection has a bias. No final norm;
// pooling only, each prompt whole (traits.encoder; its tensors load on
// BERT's road, traits.alibi).
#include <cmath>
#include <memory>
#include <string>

#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/activations.h"
#include "model/blocks/bidirectional_attention.h"
#include "model/blocks/encoder_rows.h"
#include "model/blocks/norms.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr float kMaxAlibiBias = 8.0f;  // llama.cpp's, as jina's code (slopes 2^(-8 (h + 1) / heads))

constexpr ArchitectureTraits jina_bert_v2_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/true, /*qk_norm=*/false, FfnActivation::GELU_TANH};
    t.output_bias = true;
    t.encoder = true;
    t.alibi = true;
    return t;
}

class JinaBertEncoder final : public DecoderModel {
public:
    JinaBertEncoder(ModelConfig config, ModelWeights weights)
        : config_(std::move(config)), weights_(std::move(weights)), slopes_(alibi_slopes(config_.n_heads, kMaxAlibiBias)) {}

    const ModelConfig& config() const override { return config_; }
    void limit_logits(int64_t) override {}
    int64_t logit_count() const override { return 0; }

    void forward(const std::vector<SequenceSlice>& batch, KVCache&, ThreadPool& pool,
                 std::vector<float>& logits) override {
        const ModelConfig& c = config_;
        const int64_t dim = c.dim;
        whole_prompt_positions(c, batch, positions_);
        const int64_t T = static_cast<int64_t>(positions_.size());
        for (std::vector<float>* buffer : {&x_, &h_, &q_, &k_, &v_, &attn_}) buffer->resize(T * dim);
        gate_.resize(T * c.ffn_dim);
        up_.resize(T * c.ffn_dim);
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
        add_bias_rows(q_.data(), w.bq, T);
        add_bias_rows(k_.data(), w.bk, T);
        add_bias_rows(v_.data(), w.bv, T);
        bidirectional_attention(c, batch, l, q_.data(), k_.data(), v_.data(), attn_.data(), pool, slopes_.data());
        kernels::matmul(w.wo, attn_.data(), T, h_.data(), pool);
        add_bias_rows(h_.data(), w.bo, T);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
        layer_norm_rows(x_.data(), w.attn_norm.data(), w.attn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
        kernels::matmul_shared({{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}}, x_.data(), T, pool);
        for (size_t i = 0; i < gate_.size(); ++i)
            gate_[i] = gelu_erf(gate_[i]) * up_[i];
        kernels::matmul(w.w_down, gate_.data(), T, h_.data(), pool);
        add_bias_rows(h_.data(), w.down_bias, T);
        add_in_place(x_.data(), h_.data(), T * dim, pool);
        layer_norm_rows(x_.data(), w.ffn_norm.data(), w.ffn_norm_bias.data(), x_.data(), T, dim, c.rms_eps, pool);
    }

    ModelConfig config_;
    ModelWeights weights_;
    std::vector<float> slopes_;
    std::vector<int32_t> positions_;
    std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_;
};

std::unique_ptr<DecoderModel> build_jina_bert_v2(ModelConfig config, ModelWeights weights, int) {
    if (config.n_kv_heads != config.n_heads || config.head_dim * config.n_heads != config.dim)
        throw_model_load(config.architecture + ": grouped or resized attention heads are not jina-bert-v2's");
    return std::make_unique<JinaBertEncoder>(std::move(config), std::move(weights));
}

}  // namespace

extern const Architecture kJinaBertV2Architecture = {"jina-bert-v2", jina_bert_v2_traits(), build_jina_bert_v2};

}  // namespace vllm
