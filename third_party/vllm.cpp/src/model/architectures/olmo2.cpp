// OLMo 2: no norm before attention or the MLP; each sublayer's output is
// RMS-normalised (post_attention_norm, post_ffw_norm) before its residual
// add, and q and k are RMS-normalised over the whole projection (not per
// head) before RoPE over halves. Gemma 2's sandwich layer without its
// pre-norms (build_sandwich_decoder). OLMo 3's sliding-window layers (an
// olmo2 GGUF with attention.sliding_window) are refused.
#include "model/architectures/architectures.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits olmo2_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true, FfnActivation::SILU,
                         /*post_norms=*/true};
    t.qk_norm_whole = true;
    t.pre_norms = false;
    t.refuses_sliding_window = true;
    return t;
}

}  // namespace

extern const Architecture kOlmo2Architecture = {"olmo2", olmo2_traits(), build_sandwich_decoder};

}  // namespace vllm
