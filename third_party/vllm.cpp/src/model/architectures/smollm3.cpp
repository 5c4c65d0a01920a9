// SmolLM3: Llama's pre-norm decoder in which every 4th layer (the 4th, 8th,
// ...) attends without rotary embeddings ("NoPE" layers). llama.cpp fixes the
// step at 4 (its GGUFs have no key for it); a Hugging Face source gives it
// from config.json's no_rope_layers. RoPE over adjacent pairs as llama.cpp's
// converter permutes q/k (halves for a Hugging Face source).
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits smollm3_traits() {
    ArchitectureTraits t{RopeStyle::ADJACENT_PAIRS, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU};
    t.no_rope_layer_step = 4;
    return t;
}

}  // namespace

extern const Architecture kSmolLm3Architecture = {"smollm3", smollm3_traits(), build_llama_decoder};

}  // namespace vllm
