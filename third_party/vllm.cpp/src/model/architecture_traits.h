// What an architecture fixes that its GGUF metadata does not say (its
// registry entry, architecture.h), held by every ModelConfig as
// ModelConfig::traits so that a new trait is written here once: the
// architectures set it, the shared blocks read config.traits.
#pragma once

namespace vllm {

// How RoPE pairs a head's dimensions.
enum class RopeStyle {
    ADJACENT_PAIRS,  // rotate (x[2i], x[2i+1]): Llama/Mistral GGUFs (q/k permuted by the converter)
    HALVES,          // rotate (x[i], x[i + d/2]): Qwen2/Qwen3/Gemma ("neox")
};

// Multimodal RoPE (Qwen2-VL and later): each head's rotated pairs are cut
// into sections rotated by a token's temporal, height and width position
// (<arch>.rope.dimension_sections; text tokens have three equal positions,
// so for them it is plain RoPE).
enum class MultimodalRope {
    NONE,         // rope.dimension_sections refused
    SECTIONS,     // Qwen2-VL / Qwen2.5-VL: contiguous sections t | h | w
    INTERLEAVED,  // Qwen3-VL: pairs cycle t, h, w, t, h, w, ... (llama.cpp's imrope)
};

// How a mixture-of-experts router turns its logits into expert scores.
enum class ExpertGating {
    SOFTMAX,  // softmax over all experts (Qwen MoE, Mixtral, OLMoE, Granite MoE)
    SIGMOID,  // each logit's sigmoid on its own
    // The top k by logit, weighted by the softmax over those k logits only
    // (gpt-oss; llama.cpp's SOFTMAX_WEIGHT).
    SOFTMAX_OF_PICKED,
};

// The FFN's gate activation: out = act(gate) * up.
enum class FfnActivation {
    SILU,       // SwiGLU: Llama, Qwen
    GELU_TANH,  // GeGLU with the tanh approximation of GELU: Gemma
    // gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7),
    // out = g * sigmoid(1.702 g) * (u + 1).
    SWIGLU_OAI,
};

// What the architecture fixes that its GGUF metadata does not say. The
// fields are positional (the architectures initialise the leading ones in
// order): add a new one at the end. Four a source may override, and
// ModelConfig::traits holds them as the file resolved them: rope_style,
// expert_gating, rope_theta_sliding and no_rope_layer_step.
struct ArchitectureTraits {
    // RoPE's pairing in llama.cpp's GGUF layout; a Hugging Face source whose
    // q/k rows are as trained (vllm.rope_style "halves") rotates halves.
    RopeStyle rope_style = RopeStyle::ADJACENT_PAIRS;
    bool qkv_bias = false;  // Qwen2
    bool qk_norm = false;   // Qwen3, Gemma 3
    FfnActivation ffn_activation = FfnActivation::SILU;
    // Gemma 2/3 "sandwich" norms: the attention and FFN outputs are
    // RMS-normalised (post_attention_norm, post_ffw_norm) before the residual add.
    bool post_norms = false;
    bool sliding_window = false;  // reads <arch>.attention.sliding_window
    // With sliding_pattern n > 0 every n-th layer is global (llama.cpp's
    // "swa pattern": Gemma 2 alternates with 2, Gemma 3 has a global layer
    // every 6th); 0: every layer slides (Mistral). See ModelConfig::is_sliding.
    int sliding_pattern = 0;
    // Gemma 3's sliding layers rotate with their own base (rope.freq_base_swa
    // overrides; default 10000) and no linear scaling; 0: they use the global
    // rope_theta and rope_freq_scale.
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
    // OLMoE: q_norm/k_norm normalise each token's whole q and k projection
    // (n_heads * head_dim floats) rather than each head.
    bool qk_norm_whole = false;
    // gpt-oss: a bias on the attention output (attn_output.bias), a learned
    // sink logit per head in every layer's softmax (attn_sinks.weight), a
    // bias on the router and on each expert's matrices (ffn_gate_inp.bias,
    // ffn_{gate,up,down}_exps.bias), the router's gating (see ExpertGating),
    // and the pre-MLP norm stored under the name post_attention_norm rather
    // than ffn_norm.
    bool output_bias = false;
    bool attn_sinks = false;
    bool expert_bias = false;
    ExpertGating expert_gating = ExpertGating::SOFTMAX;  // <arch>.expert_gating_func overrides
    const char* ffn_norm_tensor = "ffn_norm";
    // Qwen3.5: Gated DeltaNet layers among gated full-attention layers (see
    // ModelConfig::recurrent_layers), read from <arch>.ssm.* and
    // <arch>.attention.recurrent_layers.
    bool hybrid_linear_attention = false;
    // OLMo 2: no norm before attention or the MLP (the sublayers read the
    // residual stream as is; their outputs are normalised by the post norms).
    bool pre_norms = true;
    // SmolLM3: every no_rope_layer_step-th layer (the 4th, 8th, ...) attends
    // without rotary embeddings; 0: every layer rotates. llama.cpp fixes 4
    // (its GGUFs have no key for it); a Hugging Face source gives the step of
    // its no_rope_layers list (vllm.no_rope_layer_step).
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
    // BERT's encoder (architectures/bert.cpp): bidirectional attention over
    // each request's whole prompt, learned absolute positions and token
    // types, LayerNorms with biases after each sublayer (eps from
    // <arch>.attention.layer_norm_epsilon), no output head: a pooling-only
    // model, each pooling request scheduled whole in one step.
    bool encoder = false;
    // Qwen2.5-VL / Qwen3-VL's language models: see MultimodalRope.
    MultimodalRope multimodal_rope = MultimodalRope::NONE;
};

}  // namespace vllm
