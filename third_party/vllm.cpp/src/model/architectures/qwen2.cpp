// Qwen2 (also Qwen2.5): Llama's pre-norm decoder (llama.cpp) with a bias on
// the q, k and v projections (attention_heads.h adds it) and RoPE over
// halves of each head.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits qwen2_traits() {
    ArchitectureTraits t;
    t.rope_style = RopeStyle::HALVES;
    t.qkv_bias = true;
    t.ffn_activation = FfnActivation::SILU;
    return t;
}

}  // namespace

extern const Architecture kQwen2Architecture = {"qwen2", qwen2_traits(), build_llama_decoder};

}  // namespace vllm
