// Qwen3: Llama's pre-norm decoder (llama.cpp) with an RMS norm on each q and
// k head before RoPE (attention_heads.h), no qkv bias, RoPE over halves.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits qwen3_traits() {
    ArchitectureTraits t;
    t.rope_style = RopeStyle::HALVES;
    t.qk_norm = true;
    t.ffn_activation = FfnActivation::SILU;
    return t;
}

}  // namespace

extern const Architecture kQwen3Architecture = {"qwen3", qwen3_traits(), build_llama_decoder};

}  // namespace vllm
