// DeepSeek-V2 and V2-Lite (and the models that reuse their attention):
// Llama's pre-norm decoder whose attention is multi-head latent attention
// (blocks/latent_attention.h: the cache holds a compressed latent and a
// rotary key part per token, attention runs absorbed) and whose MLP is a
// mixture of experts after the first leading_dense_block_count dense layers
// (blocks/moe.h: softmax router, top-k weights scaled by
// routed_scaling_factor, not renormalised unless the GGUF says so, plus
// the shared experts as one MLP). RoPE rotates adjacent pairs of the rope
// part only. Group-limited routing (n_group > 1) is refused at load.
#include "model/architectures/architectures.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class Deepseek2Decoder final : public Decoder {
public:
    using Decoder::Decoder;

protected:
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        latent_attention(batch, l, cache, pool);
        add_norm(weights_.layers[l].ffn_norm, pool);
        mlp(l, pool);
        end_layer(l, pool);
    }
};

std::unique_ptr<DecoderModel> build_deepseek2_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<Deepseek2Decoder>(std::move(config), std::move(weights), max_model_len);
}

constexpr ArchitectureTraits deepseek2_traits() {
    ArchitectureTraits t{RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU};
    t.mla = true;
    return t;
}

}  // namespace

extern const Architecture kDeepseek2Architecture = {"deepseek2", deepseek2_traits(), build_deepseek2_decoder};

}  // namespace vllm
