// The AVX-512 (F/BW/VL/DQ/VNNI) build of the kernels. Only call it after
// dispatch.cpp has checked the CPU.
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/x86_features.h"

namespace vllm::kernels {

const IsaKernels& avx512_kernels() {
    static const IsaKernels k = [] {
        IsaKernels t = make_isa_kernels<Avx512>();
        avx512::set_ops(t);
        if (x86_features().avx512bf16) use_avx512_bf16(t);
        return t;
    }();
    return k;
}

}  // namespace vllm::kernels
