// Run-time choice among the per-ISA builds of ops.h's kernels, following
// the matmul kernels' choice (kernels::active_isa()).
#include "kernels/cpu/ops.h"

#include <cstring>

#include "kernels/cpu/kernels.h"

namespace vllm::kernels {

#define VLLM_DECLARE_OPS(ns)                                                                      \
    namespace ns {                                                                                \
    void attention_tile(const PagedAttention&, const AttentionTile&);                             \
    void silu_mul(float*, const float*, int64_t);                                                 \
    void gelu_tanh_mul(float*, const float*, int64_t);                                            \
    void soft_cap(float*, int64_t, float);                                                        \
    void rms_norm(const float*, const float*, float*, int64_t, float);                            \
    }
VLLM_DECLARE_OPS(scalar)
#ifdef VLLM_HAVE_X86_KERNELS
VLLM_DECLARE_OPS(avx2)
VLLM_DECLARE_OPS(avx512)
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
VLLM_DECLARE_OPS(neon)  // ops_neon.cpp
#endif
#undef VLLM_DECLARE_OPS

namespace {

struct OpsTable {
    decltype(&scalar::attention_tile) attention_tile;
    decltype(&scalar::silu_mul) silu_mul;
    decltype(&scalar::gelu_tanh_mul) gelu_tanh_mul;
    decltype(&scalar::soft_cap) soft_cap;
    decltype(&scalar::rms_norm) rms_norm;
};

#define VLLM_OPS_TABLE(ns) OpsTable{ns::attention_tile, ns::silu_mul, ns::gelu_tanh_mul, ns::soft_cap, ns::rms_norm}

const OpsTable& ops() {
    static const OpsTable table = [] {
#ifdef VLLM_HAVE_X86_KERNELS
        const char* isa = active_isa();
        if (std::strcmp(isa, "avx512") == 0) return VLLM_OPS_TABLE(avx512);
        if (std::strcmp(isa, "avx2") == 0) return VLLM_OPS_TABLE(avx2);
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
        if (std::strcmp(active_isa(), "neon") == 0) return VLLM_OPS_TABLE(neon);
#endif
        return VLLM_OPS_TABLE(scalar);
    }();
    return table;
}
#undef VLLM_OPS_TABLE

}  // namespace

void attention_tile(const PagedAttention& a, const AttentionTile& tile) { ops().attention_tile(a, tile); }

void silu_mul(float* gate, const float* up, int64_t n) { ops().silu_mul(gate, up, n); }

void gelu_tanh_mul(float* gate, const float* up, int64_t n) { ops().gelu_tanh_mul(gate, up, n); }

void soft_cap(float* x, int64_t n, float cap) { ops().soft_cap(x, n, cap); }

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    ops().rms_norm(x, weight, out, n, eps);
}

}  // namespace vllm::kernels
