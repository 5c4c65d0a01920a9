// ops.h's kernels, called through the active kernel build's table (isa.h),
// like the matmuls: one choice of instruction set for everything.
#include "kernels/cpu/ops.h"

#include "kernels/cpu/isa.h"

#include <algorithm>
#include <cmath>

namespace vllm::kernels {

void attention_tile(const PagedAttention& a, const AttentionTile& tile) { active_kernels().attention_tile(a, tile); }

void silu_mul(float* gate, const float* up, int64_t n) { active_kernels().silu_mul(gate, up, n); }

void gelu_tanh_mul(float* gate, const float* up, int64_t n) { active_kernels().gelu_tanh_mul(gate, up, n); }

void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], limit), u = std::clamp(up[i], -limit, limit);
        gate[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
    }
}

void soft_cap(float* x, int64_t n, float cap) { active_kernels().soft_cap(x, n, cap); }

float sum_exp(const float* x, int64_t n, float shift) { return active_kernels().sum_exp(x, n, shift); }

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    active_kernels().rms_norm(x, weight, out, n, eps);
}

}  // namespace vllm::kernels
