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

// Also GLM-4 and OLMo 2 (build_sandwich_decoder): the same layer without
// Gemma's embedding scale; OLMo 2 has no pre-norms (decoder.h).
class GemmaDecoder final : public Decoder {
public:
    GemmaDecoder(ModelConfig config, ModelWeights weights, int max_model_len, bool scale_embedding)
        : Decoder(std::move(config), std::move(weights), max_model_len) {
        if (scale_embedding) embedding_multiplier_ = embedding_scale(config_.dim);
    }

protected:
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        const LayerWeights& w = weights_.layers[l];
        const bool sandwich = config_.traits.post_norms;  // Gemma 2/3
        self_attention(batch, l, cache, pool);
        if (sandwich) norm_output(w.post_attn_norm, pool);
        add_norm(w.ffn_norm, pool);
        mlp(l, pool);
        if (sandwich) norm_output(w.post_ffn_norm, pool);
        end_layer(l, pool);
    }
};

std::unique_ptr<DecoderModel> build_gemma_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<GemmaDecoder>(std::move(config), std::move(weights), max_model_len, true);
}

// Gemma 2 alternates sliding and global layers (pattern 2), Gemma 3 has a
// global layer every 6th; 46 and 62 are the block counts of their 27B models.
constexpr ArchitectureTraits kGemmaTraits{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/false,
                                          FfnActivation::GELU_TANH};
constexpr ArchitectureTraits kGemma2Traits{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/false,
                                           FfnActivation::GELU_TANH, /*post_norms=*/true, /*sliding_window=*/true,
                                           /*sliding_pattern=*/2, /*rope_theta_sliding=*/0.0f, /*layers_of_27b=*/46};
constexpr ArchitectureTraits kGemma3Traits{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true,
                                           FfnActivation::GELU_TANH, /*post_norms=*/true, /*sliding_window=*/true,
                                           /*sliding_pattern=*/6, /*rope_theta_sliding=*/10000.0f,
                                           /*layers_of_27b=*/62};

}  // namespace

std::unique_ptr<DecoderModel> build_sandwich_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<GemmaDecoder>(std::move(config), std::move(weights), max_model_len, false);
}

extern const Architecture kGemmaArchitecture = {"gemma", kGemmaTraits, build_gemma_decoder};
extern const Architecture kGemma2Architecture = {"gemma2", kGemma2Traits, build_gemma_decoder};
extern const Architecture kGemma3Architecture = {"gemma3", kGemma3Traits, build_gemma_decoder};

}  // namespace vllm
