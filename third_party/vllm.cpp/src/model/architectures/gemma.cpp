// Gemma 1-3: a pre-norm decoder whose token embedding is scaled by
// sqrt(dim), with GeGLU (tanh-approximated GELU) in the MLP and RoPE over
// halves. Gemma 2 and 3 add "sandwich" norms (each sublayer's output is
// RMS-normalised before the residual add), sliding-window layers in a fixed
// pattern and, in Gemma 2, soft-capped attention scores and logits
// (config.attn_softcap, final_softcap: the attention and output blocks);
// Gemma 3 normalises q/k heads and rotates its sliding layers with a base
// of their own. The pattern and sliding base are the architecture's, as in
// llama.cpp (its GGUFs have no key for them).
#include "model/architectures/architectures.h"
#include "model/blocks/embedding.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class GemmaDecoder final : public Decoder {
public:
    using Decoder::Decoder;

    void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                 std::vector<float>& logits) override {
        const bool sandwich = config_.post_norms;  // Gemma 2/3
        begin_forward(batch, cache);
        embed(embedding_scale(config_.dim));
        norm(weights_.layers[0].attn_norm, pool);
        for (int l = 0; l < config_.n_layers; ++l) {
            const LayerWeights& w = weights_.layers[l];
            self_attention(batch, l, cache, pool);
            if (sandwich) norm_output(w.post_attn_norm, pool);
            add_norm(w.ffn_norm, pool);
            mlp(l, pool);
            if (sandwich) norm_output(w.post_ffn_norm, pool);
            end_layer(l, pool);
        }
        output(batch, pool, logits);
    }
};

std::unique_ptr<DecoderModel> build_gemma_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<GemmaDecoder>(std::move(config), std::move(weights), max_model_len);
}

constexpr ArchitectureTraits gemma_traits() {
    ArchitectureTraits t;
    t.rope_style = RopeStyle::HALVES;
    t.ffn_activation = FfnActivation::GELU_TANH;
    return t;
}

constexpr ArchitectureTraits gemma2_traits() {
    ArchitectureTraits t = gemma_traits();
    t.post_norms = true;
    t.sliding_window = true;
    t.sliding_pattern = 2;  // every other layer is global
    t.layers_of_27b = 46;
    return t;
}

constexpr ArchitectureTraits gemma3_traits() {
    ArchitectureTraits t = gemma2_traits();
    t.qk_norm = true;
    t.sliding_pattern = 6;  // every 6th layer is global
    t.rope_theta_sliding = 10000.0f;
    t.layers_of_27b = 62;
    return t;
}

}  // namespace

extern const Architecture kGemmaArchitecture = {"gemma", gemma_traits(), build_gemma_decoder};
extern const Architecture kGemma2Architecture = {"gemma2", gemma2_traits(), build_gemma_decoder};
extern const Architecture kGemma3Architecture = {"gemma3", gemma3_traits(), build_gemma_decoder};

}  // namespace vllm
