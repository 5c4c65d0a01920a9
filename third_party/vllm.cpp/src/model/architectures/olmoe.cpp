// OLMoE: Llama's pre-norm decoder with RoPE over halves, q and k each
// RMS-normalised over the whole projection (not per head) before RoPE, and
// a mixture of experts (blocks/moe.h) whose top-k softmax scores are kept as
// they are, as llama.cpp runs it.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits olmoe_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true, FfnActivation::SILU};
    t.qk_norm_whole = true;
    return t;
}

}  // namespace

extern const Architecture kOlmoeArchitecture = {"olmoe", olmoe_traits(), build_llama_decoder};

}  // namespace vllm
