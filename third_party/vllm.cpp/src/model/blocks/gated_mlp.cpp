#include "model/blocks/gated_mlp.h"

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"
#include "model/blocks/norms.h"

namespace vllm {

void gated_activation(FfnActivation activation, float* gate, const float* up, int64_t n, ThreadPool& pool) {
    // The activation is chosen once per chunk, not per element.
    pool.parallel_for(
        n,
        [&](int64_t begin, int64_t end) {
            if (activation == FfnActivation::GELU_TANH)
                kernels::gelu_tanh_mul(gate + begin, up + begin, end - begin);
            else if (activation == FfnActivation::SWIGLU_OAI)  // gpt-oss's alpha and limit (fixed, as in llama.cpp)
                kernels::swiglu_oai_mul(gate + begin, up + begin, end - begin, 1.702f, 7.0f);
            else
                kernels::silu_mul(gate + begin, up + begin, end - begin);
        },
        kMinParallelFloats);
}

void gated_mlp(const kernels::QuantMatrix& w_gate, const kernels::QuantMatrix& w_up, const kernels::QuantMatrix& w_down,
               FfnActivation activation, const float* x, int64_t n_tokens, float* gate, float* up, float* out,
               ThreadPool& pool, const LoraSite* lora) {
    const int64_t ffn_dim = w_gate.rows;
    kernels::matmul_shared({{&w_gate, gate}, {&w_up, up}}, x, n_tokens, pool);
    add_lora(lora, LoraTarget::GATE, x, gate, pool);
    add_lora(lora, LoraTarget::UP, x, up, pool);
    gated_activation(activation, gate, up, n_tokens * ffn_dim, pool);
    kernels::matmul(w_down, gate, n_tokens, out, pool);
    add_lora(lora, LoraTarget::DOWN, gate, out, pool);
}

}  // namespace vllm
