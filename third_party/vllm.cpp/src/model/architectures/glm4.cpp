// GLM-4 (GLM-4-9B-0414, GLM-4-32B-0414): Gemma 2's sandwich layer (a norm
// before and after attention and the MLP; build_sandwich_decoder) with a
// bias on q/k/v, gate and up fused in one ffn_up (gate rows first, as
// Phi-3), and RoPE over adjacent pairs of the first half of each head
// (rope.dimension_count; partial_rotary_factor 0.5), as transformers and
// llama.cpp (its converter keeps q/k as trained) rotate it.
#include "model/architectures/architectures.h"

namespace vllm {

extern const Architecture kGlm4Architecture = {
    "glm4",
    {RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/true, /*qk_norm=*/false, FfnActivation::SILU, /*post_norms=*/true},
    build_sandwich_decoder};

}  // namespace vllm
