// The NEON build of the kernels with the Armv8.2 dot product instructions
// (compiled with -march=armv8.2-a+dotprod, see CMakeLists.txt, which makes
// simd_neon.h use SDOT). Only call it after kernels_neon.cpp has checked
// that the CPU has them.
#include "kernels/cpu/simd_neon.h"
#include "kernels/cpu/simd_kernels.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_neon_dotprod.cpp needs the dot product extension enabled (-march=armv8.2-a+dotprod)"
#endif

namespace vllm::kernels {

const IsaKernels& neon_dotprod_kernels() {
    static const IsaKernels k = [] {
        IsaKernels t = make_isa_kernels<Neon>();
        neon::set_ops(t);  // the attention and element-wise ops need no SDOT: the plain NEON build's
        return t;
    }();
    return k;
}

}  // namespace vllm::kernels
