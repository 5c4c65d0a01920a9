// The table of kernels one instruction-set build provides, and how
// dispatch.cpp and matmul.cpp reach them. Internal to kernels/cpu (and the
// kernel tests, which compare every build on the machine with the scalar
// one).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"

namespace vllm::kernels {

// A block of a matmul: weight rows [row_begin, row_end) times activation
// rows [tok_begin, tok_end), in the activation layout of the weight type
// (act_layout.h). Writes y[t * y_stride + r].
struct GemmArgs {
    const uint8_t* w;
    size_t w_stride;  // bytes per weight row
    int64_t cols;
    int64_t row_begin, row_end;
    const uint8_t* x;
    size_t x_stride;  // bytes per activation row
    int64_t tok_begin, tok_end;
    float* y;
    int64_t y_stride;
};

using GemmFn = void (*)(const GemmArgs&);
using QuantizeFn = void (*)(const float* x, int64_t n, uint8_t* out);

// The weight types with kernels, in table order.
enum KernelSlot {
    kSlotF32,
    kSlotF16,
    kSlotBF16,
    kSlotQ4_0,
    kSlotQ4_1,
    kSlotQ5_0,
    kSlotQ5_1,
    kSlotQ8_0,
    kSlotIQ4_NL,
    kSlotIQ4_XS,
    kSlotQ2_K,
    kSlotQ3_K,
    kSlotQ4_K,
    kSlotQ5_K,
    kSlotQ6_K,
    kSlotIQ2_XXS,
    kSlotIQ2_XS,
    kSlotIQ2_S,
    kSlotIQ3_XXS,
    kSlotIQ3_S,
    kSlotIQ1_S,
    kSlotIQ1_M,
    kSlotTQ1_0,
    kSlotTQ2_0,
    kSlotMXFP4,
    kNumSlots
};

// The slot of `type`, or -1 when the type has no kernels.
int kernel_slot(GgmlType type);

struct IsaKernels {
    const char* name;
    QuantizeFn quantize_q8x32;
    QuantizeFn quantize_q8x256;
    // BF16 weights' activations rounded to bf16 (ActKind::BF16), where
    // gemm[kSlotBF16] reads them so (AVX-512 BF16); nullptr: BF16 takes
    // float activations.
    QuantizeFn quantize_bf16;
    GemmFn gemm[kNumSlots];
    // For matrices in the interleaved layout (interleave.h); nullptr where
    // the build has no such kernel for the type.
    GemmFn gemm_interleaved[kNumSlots];
    // The form of the interleaved Q8_0 weights gemm_interleaved[kSlotQ8_0] reads.
    Q8_0Bytes q8_0_bytes;
    float (*dot_f32)(const float* a, const float* b, int64_t n);
    void (*axpy_f32)(float a, const float* x, float* y, int64_t n);
    // ops.h's kernels (ops_impl.h compiled for this ISA).
    void (*attention_tile)(const PagedAttention& a, const AttentionTile& tile);
    void (*silu_mul)(float* gate, const float* up, int64_t n);
    void (*gelu_tanh_mul)(float* gate, const float* up, int64_t n);
    void (*soft_cap)(float* x, int64_t n, float cap);
    float (*sum_exp)(const float* x, int64_t n, float shift);
    void (*rms_norm)(const float* x, const float* weight, float* out, int64_t n, float eps);
};

// Each ops_<isa>.cpp fills a table's ops.h entries with its build of them.
namespace scalar { void set_ops(IsaKernels& k); }
#ifdef VLLM_HAVE_X86_KERNELS
namespace avx2 { void set_ops(IsaKernels& k); }
namespace avx512 { void set_ops(IsaKernels& k); }
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
namespace neon { void set_ops(IsaKernels& k); }
#endif

const IsaKernels& scalar_kernels();
#ifdef VLLM_HAVE_X86_KERNELS
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();
// Switches the AVX-512 table's BF16 kernel to vdpbf16ps (only on CPUs with
// AVX-512 BF16; kernels_avx512bf16.cpp).
void use_avx512_bf16(IsaKernels& k);
// The AVX-512 build with BF16 matmuls on AMX tiles (kernels_amx.cpp; only
// where x86_features().amx_bf16).
const IsaKernels& amx_kernels();
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
// AArch64: the "neon" build (kernels_neon.cpp), which is the SDOT variant
// (kernels_neon_dotprod.cpp) on CPUs with the dot product extension.
const IsaKernels& neon_kernels();
const IsaKernels& neon_dotprod_kernels();  // only via neon_kernels()
#endif

// How `isa`'s gemm for `type` reads its activations (act_layout.h).
static inline ActKind activation_kind(const IsaKernels& isa, GgmlType type) {
    return type == GgmlType::BF16 && isa.quantize_bf16 != nullptr ? ActKind::BF16 : act_kind(type);
}

// The build named `name` ("scalar", "avx2", "avx512", "amx", "neon") when this
// machine can run it, else nullptr.
const IsaKernels* find_isa(const char* name);

// The build active_isa() names.
const IsaKernels& active_kernels();

// matmul() and matmul_shared() on a given build.
void matmul_with(const IsaKernels& isa, const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool);
void matmul_shared_with(const IsaKernels& isa, const MatmulOutput* outputs, size_t n_outputs, const float* x,
                        int64_t n_tokens, ThreadPool& pool);

}  // namespace vllm::kernels
