// Phi-3: Llama's pre-norm decoder (llama.cpp) over fused matrices: q/k/v in
// one attn_qkv and gate/up in one ffn_up, which weights.cpp views as the
// separate matrices' rows (so the blocks run the same matmuls); RoPE over
// halves, with LongRoPE's short/long factor sets (rotary.h). llama.cpp
// leaves its sliding window off, and so do we.
#include "model/architectures/architectures.h"

namespace vllm {

extern const Architecture kPhi3Architecture = {
    "phi3", {RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/false, FfnActivation::SILU}, build_llama_decoder};

}  // namespace vllm
