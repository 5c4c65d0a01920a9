// Llama (also SmolLM2, Mistral): the pre-norm decoder. Each layer is
// x += attention(rms_norm(x)); x += mlp(rms_norm(x)), SwiGLU, RoPE over
// adjacent pairs as llama.cpp's converter permutes q/k (halves for a
// Hugging Face source); Llama 3's rope_freqs, linear scaling and YaRN in
// the rotary block; Mistral's sliding window in the attention block.
#include "model/architectures/architectures.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class LlamaDecoder final : public Decoder {
public:
    using Decoder::Decoder;

    // Each residual add is fused with the RMS norm that follows it (the next
    // layer's attention norm after the MLP), so a decode step's layer is five
    // parallel regions: the q/k/v matmuls, attention, the output projection,
    // gate/up and down.
    void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                 std::vector<float>& logits) override {
        begin_forward(batch, cache);
        embed();
        norm(weights_.layers[0].attn_norm, pool);
        for (int l = 0; l < config_.n_layers; ++l) {
            self_attention(batch, l, cache, pool);
            add_norm(weights_.layers[l].ffn_norm, pool);
            mlp(l, pool);
            end_layer(l, pool);
        }
        output(batch, pool, logits);
    }
};

}  // namespace

std::unique_ptr<DecoderModel> build_llama_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<LlamaDecoder>(std::move(config), std::move(weights), max_model_len);
}

namespace {

// Mistral's sliding window is <arch>.attention.sliding_window (every layer
// slides); Llama's GGUFs have none.
constexpr ArchitectureTraits llama_traits() {
    ArchitectureTraits t;
    t.rope_style = RopeStyle::ADJACENT_PAIRS;
    t.ffn_activation = FfnActivation::SILU;
    t.sliding_window = true;
    return t;
}

}  // namespace

// Mistral's GGUFs mostly name the "llama" architecture; "mistral" is the same.
extern const Architecture kLlamaArchitecture = {"llama", llama_traits(), build_llama_decoder};
extern const Architecture kMistralArchitecture = {"mistral", llama_traits(), build_llama_decoder};

}  // namespace vllm
