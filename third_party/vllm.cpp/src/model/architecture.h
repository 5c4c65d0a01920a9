// One entry of the model registry (model_registry.h): an architecture as
// GGUF's general.architecture names it, what ModelConfig reads differently
// for it (its traits), and the forward it runs. Each architecture family
// defines its entries in its own file under architectures/.
#pragma once
#include <memory>

#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace vllm {

// What the architecture fixes that its GGUF metadata does not say.
struct ArchitectureTraits {
    RopeStyle rope_style = RopeStyle::ADJACENT_PAIRS;  // of llama.cpp's GGUF layout (an HF source may override)
    bool qkv_bias = false;
    bool qk_norm = false;
    FfnActivation ffn_activation = FfnActivation::SILU;
    bool post_norms = false;
    bool sliding_window = false;    // reads <arch>.attention.sliding_window
    int sliding_pattern = 0;        // see ModelConfig::sliding_pattern
    float rope_theta_sliding = 0.0f;
    // The block count of the 27B model, whose query_pre_attn_scalar is
    // dim / n_heads rather than head_dim; llama.cpp knows it by this count
    // (its GGUFs do not store the scalar). 0: the scale is 1/sqrt(head_dim).
    int layers_of_27b = 0;
    // Mixture of experts, where the GGUF has <arch>.expert_count: whether the
    // picked experts' scores are renormalised (llama.cpp fixes it per
    // architecture; <arch>.expert_weights_norm overrides), and the expert
    // FFN length when <arch>.expert_feed_forward_length is absent: the
    // dense feed_forward_length, or (Qwen MoE, as llama.cpp) that divided by
    // the experts used per token.
    bool expert_weights_norm = false;
    bool expert_ffn_divided_by_used = false;
    // OLMoE: see ModelConfig::qk_norm_whole.
    bool qk_norm_whole = false;
    // gpt-oss: see the ModelConfig fields of the same names.
    bool output_bias = false;
    bool attn_sinks = false;
    bool expert_bias = false;
    ExpertGating expert_gating = ExpertGating::SOFTMAX;  // <arch>.expert_gating_func overrides
    const char* ffn_norm_tensor = "ffn_norm";
    // Qwen3.5: Gated DeltaNet layers among gated full-attention layers (see
    // ModelConfig::recurrent_layers), read from <arch>.ssm.* and
    // <arch>.attention.recurrent_layers.
    bool hybrid_linear_attention = false;
    // OLMo 2 and SmolLM3: see the ModelConfig fields of the same names
    // (SmolLM3's step is llama.cpp's fixed 4; its GGUFs have no key for it).
    bool pre_norms = true;
    int no_rope_layer_step = 0;
    // OLMo 2: <arch>.attention.sliding_window (OLMo 3 converts to olmo2 with
    // sliding layers) is refused rather than ignored.
    bool refuses_sliding_window = false;
    // A fixed attention scale (Gemma 4: 1, its q/k norms scale the scores;
    // llama.cpp fixes it); 0: ModelConfig::attn_scale's rule.
    float attn_scale = 0.0f;
    // Why this architecture's mixture-of-experts layers are refused
    // (nullptr: <arch>.expert_count is read as for every architecture).
    const char* experts_refused = nullptr;
    // Gemma 4: its per-layer keys (ModelConfig's Gemma 4 fields) and a
    // weightless RMS norm on the values.
    bool gemma4_layers = false;
    // DeepSeek-V2's multi-head latent attention (ModelConfig::kv_lora_rank):
    // its MLA keys are read, and q/k rotate adjacent pairs from either source
    // (llama.cpp's converter does not permute them; transformers rotates
    // them as complex pairs).
    bool mla = false;
};

// Builds the architecture's forward for a loaded model (see Decoder's
// constructor for max_model_len).
using BuildDecoder = std::unique_ptr<DecoderModel> (*)(ModelConfig config, ModelWeights weights, int max_model_len);

struct Architecture {
    const char* name;  // general.architecture
    ArchitectureTraits traits;
    BuildDecoder build;
};

}  // namespace vllm
