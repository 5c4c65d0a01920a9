// Granite MoE (granite-3.x-1b-a400m, 3b-a800m): Llama's pre-norm decoder
// with Granite's multipliers (the embedding scaled by embedding_scale, each
// sublayer's output by residual_scale before its residual add, attention
// scores by attention.scale, the logits divided by logit_scale: the shared
// blocks read them from the config) and a mixture of experts whose top-k
// softmax scores are renormalised (blocks/moe.h), plus a shared expert in
// the "shared" variant. RoPE over adjacent pairs as llama.cpp's converter
// permutes q/k. The dense Granite 3 (granite.cpp) runs the same decoder.
#include "model/architectures/architectures.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class GraniteDecoder final : public Decoder {
public:
    GraniteDecoder(ModelConfig config, ModelWeights weights, int max_model_len)
        : Decoder(std::move(config), std::move(weights), max_model_len),
          residual_scaled_(config_.residual_scale != 1.0f) {}

protected:
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        self_attention(batch, l, cache, pool);
        if (residual_scaled_) scale_sublayer_output(config_.residual_scale);
        add_norm(weights_.layers[l].ffn_norm, pool);
        mlp(l, pool);
        if (residual_scaled_) scale_sublayer_output(config_.residual_scale);
        end_layer(l, pool);
    }

private:
    const bool residual_scaled_;
};

}  // namespace

std::unique_ptr<DecoderModel> build_granite_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<GraniteDecoder>(std::move(config), std::move(weights), max_model_len);
}

namespace {

constexpr ArchitectureTraits granite_moe_traits() {
    ArchitectureTraits t{RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU};
    t.expert_weights_norm = true;
    return t;
}

}  // namespace

extern const Architecture kGraniteMoeArchitecture = {"granitemoe", granite_moe_traits(), build_granite_decoder};

}  // namespace vllm
