// The AVX2 build of the kernels (compiled with -mavx2 -mfma -mf16c, see
// CMakeLists.txt). Only call it after dispatch.cpp has checked the CPU.
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/simd_kernels.h"

namespace vllm::kernels {

const IsaKernels& avx2_kernels() {
    static const IsaKernels k = [] {
        IsaKernels t = make_isa_kernels<Avx2>();
        avx2::set_ops(t);
        return t;
    }();
    return k;
}

}  // namespace vllm::kernels
