// DeepSeek-V2 and V2-Lite (and the models that reuse their attention):
// Llama's pre-norm decoder whose attention is multi-head latent attention
// (Decoder::self_attention runs blocks/latent_attention.h for an MLA
// config: the cache holds a compressed latent and a rotary key part per
// token, attention runs absorbed) and whose MLP is a mixture of experts
// after the first leading_dense_block_count dense layers (blocks/moe.h:
// softmax router, top-k weights scaled by routed_scaling_factor, not
// renormalised unless the GGUF says so, the shared experts as one MLP).
// RoPE rotates adjacent pairs of the rope part only. Group-limited routing
// (n_group > 1) as the source's reference runs it (ModelConfig::n_expert_groups).
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits deepseek2_traits() {
    ArchitectureTraits t{RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU};
    t.mla = true;
    return t;
}

}  // namespace

extern const Architecture kDeepseek2Architecture = {"deepseek2", deepseek2_traits(), build_llama_decoder};

}  // namespace vllm
