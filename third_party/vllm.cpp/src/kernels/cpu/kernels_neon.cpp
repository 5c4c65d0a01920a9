// The NEON (AArch64 Advanced SIMD) build of the kernels. Baseline AArch64
// guarantees only NEON, so this file is compiled without extra flags and
// its dot products use widening multiplies (see simd_neon.h). CPUs with
// the Armv8.2 dot product extension get the same kernels built with SDOT
// instead (kernels_neon_dotprod.cpp), chosen here once from what the
// kernel reports; both are the one "neon" build to dispatch.cpp.
#include "kernels/cpu/simd_neon.h"
#include "kernels/cpu/simd_kernels.h"

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  // AT_HWCAP bit of the dot product instructions (asm/hwcap.h)
#endif
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace vllm::kernels {

namespace {

bool cpu_has_dotprod() {
#if defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
    int has = 0;
    size_t size = sizeof has;
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &has, &size, nullptr, 0) == 0 && has != 0;
#else
    return false;  // no portable way to ask: the plain NEON kernels run everywhere
#endif
}

}  // namespace

const IsaKernels& neon_kernels() {
    static const IsaKernels& k = [] () -> const IsaKernels& {
        if (cpu_has_dotprod()) return neon_dotprod_kernels();
        static const IsaKernels plain = [] {
            IsaKernels t = make_isa_kernels<Neon>();
            neon::set_ops(t);
            return t;
        }();
        return plain;
    }();
    return k;
}

}  // namespace vllm::kernels
