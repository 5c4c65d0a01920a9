// Llama (also SmolLM2, Mistral): the pre-norm decoder. Each layer is
// x += attention(rms_norm(x)); x += mlp(rms_norm(x)), SwiGLU, RoPE over
// adjacent pairs as llama.cpp's converter permutes q/k (halves for a
// Hugging Face source); Llama 3's rope_freqs, linear scaling and YaRN in
// the rotary block; Mistral's sliding window in the attention block.
// Mixtral is a "llama" GGUF with <arch>.expert_count: its MLP is then a
// mixture of experts (blocks/moe.h) with renormalised top-k scores.
#include "model/architectures/architectures.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class LlamaDecoder final : public Decoder {
public:
    using Decoder::Decoder;

protected:
    // Each residual add is fused with the RMS norm that follows it (the next
    // layer's attention norm after the MLP), so a decode step's layer is five
    // parallel regions: the q/k/v matmuls, attention, the output projection,
    // gate/up and down.
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        self_attention(batch, l, cache, pool);
        add_norm(weights_.layers[l].ffn_norm, pool);
        mlp(l, pool);
        end_layer(l, pool);
    }
};

}  // namespace

std::unique_ptr<DecoderModel> build_llama_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<LlamaDecoder>(std::move(config), std::move(weights), max_model_len);
}

// A sliding window, where the GGUF has <arch>.attention.sliding_window,
// covers every layer (Mistral's GGUFs mostly name the "llama" architecture).
constexpr ArchitectureTraits llama_traits() {
    ArchitectureTraits t{RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU,
                         /*post_norms=*/false, /*sliding_window=*/true};
    t.expert_weights_norm = true;  // Mixtral
    return t;
}
constexpr ArchitectureTraits kLlamaTraits = llama_traits();

extern const Architecture kLlamaArchitecture = {"llama", kLlamaTraits, build_llama_decoder};
extern const Architecture kMistralArchitecture = {"mistral", kLlamaTraits, build_llama_decoder};

}  // namespace vllm
