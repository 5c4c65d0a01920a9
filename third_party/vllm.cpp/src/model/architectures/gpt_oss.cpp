// gpt-oss (gpt-oss-20b, gpt-oss-120b): Llama's pre-norm decoder (its pre-MLP
// norm stored as post_attention_norm) with biases on q/k/v and the
// attention output, a learned sink logit per head in every softmax
// (blocks/paged_attention.h), layers alternating a sliding window (the even
// ones, llama.cpp's rule: pattern 2) and full attention, YaRN RoPE over
// halves, and a mixture of experts (blocks/moe.h) whose router has a bias
// and weights its top-k by the softmax of their logits, with a bias on each
// expert's matrices and the clamped SwiGLU (FfnActivation::SWIGLU_OAI). The
// experts ship in MXFP4. Its harmony chat format renders through the chat
// template; parsing its channels and tool calls is not done here.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits gpt_oss_traits() {
    ArchitectureTraits t{RopeStyle::HALVES,        /*qkv_bias=*/true,        /*qk_norm=*/false,
                         FfnActivation::SWIGLU_OAI, /*post_norms=*/false,     /*sliding_window=*/true,
                         /*sliding_pattern=*/2};
    t.output_bias = true;
    t.attn_sinks = true;
    t.expert_bias = true;
    t.expert_gating = ExpertGating::SOFTMAX_OF_PICKED;
    t.ffn_norm_tensor = "post_attention_norm";
    return t;
}

}  // namespace

extern const Architecture kGptOssArchitecture = {"gpt-oss", gpt_oss_traits(), build_llama_decoder};

}  // namespace vllm
