// Hyperparameters of a decoder, read from GGUF metadata (`<arch>.*` keys).
// The Llama family shares one forward; the flags below are what its
// members differ in.
#pragma once
#include <string>

namespace vllm {

class ModelSource;

enum class RopeStyle {
    ADJACENT_PAIRS,  // rotate (x[2i], x[2i+1]): Llama/Mistral GGUFs (q/k permuted by the converter)
    HALVES,          // rotate (x[i], x[i + d/2]): Qwen2/Qwen3 ("neox")
};

struct ModelConfig {
    std::string architecture;
    int n_layers = 0;
    int dim = 0;            // embedding length
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int ffn_dim = 0;
    int vocab_size = 0;
    int context_length = 0;
    int rope_dim = 0;       // leading dims of each head that RoPE rotates
    float rope_theta = 10000.0f;
    // Linear RoPE scaling ("rope.scaling.type" = "linear"): every angle is
    // multiplied by 1 / rope.scaling.factor. 1 when the model has none.
    float rope_freq_scale = 1.0f;
    float rms_eps = 1e-5f;
    RopeStyle rope_style = RopeStyle::ADJACENT_PAIRS;
    bool qkv_bias = false;  // Qwen2
    bool qk_norm = false;   // Qwen3

    // MODEL_LOAD error for an architecture this engine does not run, or for
    // missing/inconsistent hyperparameters.
    static ModelConfig from_source(const ModelSource& file);
};

}  // namespace vllm
