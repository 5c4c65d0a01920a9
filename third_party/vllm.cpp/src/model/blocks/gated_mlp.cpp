#include "model/blocks/gated_mlp.h"

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"
#include "model/blocks/norms.h"

namespace vllm {

void gated_mlp(const LayerWeights& w, FfnActivation activation, int64_t ffn_dim, const float* x, int64_t n_tokens,
               float* gate, float* up, float* out, ThreadPool& pool) {
    kernels::matmul_shared({{&w.w_gate, gate}, {&w.w_up, up}}, x, n_tokens, pool);
    // The activation is chosen once per chunk, not per element.
    pool.parallel_for(
        n_tokens * ffn_dim,
        [&](int64_t begin, int64_t end) {
            if (activation == FfnActivation::GELU_TANH)
                kernels::gelu_tanh_mul(gate + begin, up + begin, end - begin);
            else
                kernels::silu_mul(gate + begin, up + begin, end - begin);
        },
        kMinParallelFloats);
    kernels::matmul(w.w_down, gate, n_tokens, out, pool);
}

}  // namespace vllm
