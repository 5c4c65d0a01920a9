// Qwen3.5 / Qwen3.6 hybrids (qwen35 dense, qwen35moe): Gated DeltaNet
// linear-attention layers (blocks/gated_delta_net.h) interleaved with gated
// full-attention layers (per-head q/k RMS norms, partial RoPE over halves,
// the output gate: ModelConfig::attn_output_gate), each followed by the
// MLP behind its own pre-norm (llama.cpp's post_attention_norm). Which
// layers are which: the GGUF's attention.recurrent_layers. For text the
// multimodal RoPE (interleaved sections) is plain RoPE: all three position
// ids are the token's position. qwen35moe's MLP is a mixture of experts with
// renormalised top-k softmax scores and a shared expert behind a sigmoid
// gate (blocks/moe.h). The multi-token-prediction layers a GGUF may carry
// are not run (no speculative decoding for these models).
#include "model/architectures/architectures.h"
#include "model/decoder.h"

namespace vllm {

namespace {

class Qwen35Decoder final : public Decoder {
public:
    using Decoder::Decoder;

protected:
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        if (config_.is_recurrent(l))
            linear_attention(batch, l, cache, pool);
        else
            self_attention(batch, l, cache, pool);
        add_norm(weights_.layers[l].ffn_norm, pool);
        mlp(l, pool);
        end_layer(l, pool);
    }
};

std::unique_ptr<DecoderModel> build_qwen35_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<Qwen35Decoder>(std::move(config), std::move(weights), max_model_len);
}

constexpr ArchitectureTraits qwen35_traits(bool experts) {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true, FfnActivation::SILU};
    t.ffn_norm_tensor = "post_attention_norm";
    t.hybrid_linear_attention = true;
    t.expert_weights_norm = experts;
    return t;
}

}  // namespace

extern const Architecture kQwen35Architecture = {"qwen35", qwen35_traits(false), build_qwen35_decoder};
extern const Architecture kQwen35MoeArchitecture = {"qwen35moe", qwen35_traits(true), build_qwen35_decoder};

}  // namespace vllm
