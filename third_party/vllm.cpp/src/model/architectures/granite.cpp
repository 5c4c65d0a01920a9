// Granite 3 (dense: granite-3.x-2b/8b): Granite MoE's decoder (granite_moe.cpp)
// with a dense SwiGLU MLP: the embedding scaled by embedding_scale, each
// sublayer's output by residual_scale, attention scores by attention.scale,
// the logits divided by logit_scale. RoPE over adjacent pairs as llama.cpp's
// converter permutes q/k (halves for a Hugging Face source).
#include "model/architectures/architectures.h"

namespace vllm {

extern const Architecture kGraniteArchitecture = {
    "granite", {RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU},
    build_granite_decoder};

}  // namespace vllm
