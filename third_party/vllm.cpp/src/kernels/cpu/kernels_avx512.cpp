// The AVX-512 (F/BW/VL/DQ/VNNI) build of the kernels. Only call it after
// dispatch.cpp has checked the CPU.
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_kernels.h"

namespace vllm::kernels {

const IsaKernels& avx512_kernels() {
    static const IsaKernels k = make_isa_kernels<Avx512>();
    return k;
}

}  // namespace vllm::kernels
