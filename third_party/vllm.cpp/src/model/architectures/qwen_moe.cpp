// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B) and Qwen3-MoE (Qwen3-30B-A3B,
// Qwen3-Coder-30B-A3B): Qwen2's and Qwen3's attention (qkv bias; per-head
// q/k norms) over Llama's pre-norm decoder, whose MLP is a mixture of
// experts (blocks/moe.h). Qwen2-MoE adds a shared expert gated by a sigmoid
// and keeps the top-k softmax scores as they are; Qwen3-MoE renormalises
// them (llama.cpp fixes both per architecture). Without an expert length in
// the GGUF, llama.cpp takes feed_forward_length / expert_used_count.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits qwen_moe_traits(bool qkv_bias, bool qk_norm, bool renormalise) {
    ArchitectureTraits t{RopeStyle::HALVES, qkv_bias, qk_norm, FfnActivation::SILU};
    t.expert_weights_norm = renormalise;
    t.expert_ffn_divided_by_used = true;
    return t;
}

}  // namespace

extern const Architecture kQwen2MoeArchitecture = {"qwen2moe", qwen_moe_traits(true, false, false), build_llama_decoder};
extern const Architecture kQwen3MoeArchitecture = {"qwen3moe", qwen_moe_traits(false, true, true), build_llama_decoder};

}  // namespace vllm
