// What this x86-64 CPU and its operating system let the kernels use, read
// with CPUID and XGETBV directly. (GCC's and Clang's __builtin_cpu_supports
// need a compiler runtime that provides __cpu_model; zig's, which builds
// the manylinux_2_28 wheels, has none, so the engine asks the CPU itself.)
#pragma once

namespace vllm::kernels {

struct X86Features {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool bmi2 = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    // AMX tiles with bf16 products (and AVX-512 BF16), which Linux also
    // lets this process use: the first probe asks for the permission
    // (arch_prctl ARCH_REQ_XCOMP_PERM), refused where a thread's signal
    // stack is too small for the tile state.
    bool amx_bf16 = false;
};

// Read once; every flag also requires the OS to save the registers it
// needs (YMM for AVX/AVX2/FMA/F16C, ZMM and mask registers for AVX-512).
// All false on other architectures.
const X86Features& x86_features();

}  // namespace vllm::kernels
