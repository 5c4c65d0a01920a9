// The gated feed-forward block: out = W_down (act(W_gate x) * W_up x), with
// SiLU (SwiGLU: Llama, Qwen, Phi-3) or tanh-approximated GELU (GeGLU: Gemma)
// as the gate's activation. Phi-3's fused gate+up matrix arrives as two row
// views (weights.h), so every family runs the same two matmuls.
#pragma once
#include <cstdint>

#include "model/blocks/lora.h"
#include "model/model_config.h"
#include "kernels/cpu/kernels.h"
#include "util/thread_pool.h"

namespace vllm {

// gate[i] = act(gate[i]) * up[i] for i in [0, n), in parallel.
void gated_activation(FfnActivation activation, float* gate, const float* up, int64_t n, ThreadPool& pool);

// x: [n_tokens][dim] in; out: [n_tokens][dim] (may alias x); gate and up:
// [n_tokens][ffn_dim] scratch, ffn_dim = w_gate.rows. A layer's dense MLP,
// a shared expert or one expert of a mixture (moe.h). `lora`: the site
// whose adapters' gate/up/down corrections join the three matmuls (lora.h).
void gated_mlp(const kernels::QuantMatrix& w_gate, const kernels::QuantMatrix& w_up, const kernels::QuantMatrix& w_down,
               FfnActivation activation, const float* x, int64_t n_tokens, float* gate, float* up, float* out,
               ThreadPool& pool, const LoraSite* lora = nullptr);

}  // namespace vllm
