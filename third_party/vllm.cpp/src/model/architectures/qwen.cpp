// Qwen2 (also Qwen2.5) and Qwen3: Llama's pre-norm decoder (llama.cpp) with
// RoPE over halves of each head. Qwen2 adds a bias to the q, k and v
// projections; Qwen3 drops it and RMS-normalises each q and k head before
// RoPE instead (both in attention_heads.h). Their vision-language models'
// language models (qwen2vl, qwen3vl) are these with multimodal RoPE.
#include "model/architectures/architectures.h"

namespace vllm {

constexpr ArchitectureTraits kQwen2Traits{RopeStyle::HALVES, /*qkv_bias=*/true, /*qk_norm=*/false, FfnActivation::SILU};
constexpr ArchitectureTraits kQwen3Traits{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true, FfnActivation::SILU};

extern const Architecture kQwen2Architecture = {"qwen2", kQwen2Traits, build_llama_decoder};
extern const Architecture kQwen3Architecture = {"qwen3", kQwen3Traits, build_llama_decoder};

// Qwen2.5-VL's and Qwen3-VL's language models (llama.cpp's qwen2vl, qwen3vl):
// Qwen2's and Qwen3's decoders with multimodal RoPE sections, plain RoPE
// for text (architecture_traits.h).
constexpr ArchitectureTraits with_multimodal_rope(ArchitectureTraits t, MultimodalRope layout) {
    t.multimodal_rope = layout;
    return t;
}
extern const Architecture kQwen2VlArchitecture = {
    "qwen2vl", with_multimodal_rope(kQwen2Traits, MultimodalRope::SECTIONS), build_llama_decoder};
extern const Architecture kQwen3VlArchitecture = {
    "qwen3vl", with_multimodal_rope(kQwen3Traits, MultimodalRope::INTERLEAVED), build_llama_decoder};

}  // namespace vllm
