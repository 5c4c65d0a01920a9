#include "kernels/cpu/x86_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <cstdint>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace vllm::kernels {

namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned reg, int n) { return ((reg >> n) & 1u) != 0; }

// XCR0: which register states the OS saves on a context switch. Only
// valid when CPUID says OSXSAVE (the OS enabled XSAVE and XGETBV).
uint64_t xcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Linux hands out the tile state (8 KiB a thread) only to processes that
// ask for it.
bool amx_permitted() {
#if defined(__x86_64__) && defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

X86Features probe() {
    X86Features f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = bit(c, 27), avx = bit(c, 28);
    const bool fma = bit(c, 12), f16c = bit(c, 29);
    const uint64_t xcr = osxsave ? xcr0() : 0;
    const bool ymm_saved = (xcr & 0x6) == 0x6;     // SSE and AVX state
    const bool zmm_saved = (xcr & 0xe6) == 0xe6;   // plus opmask, ZMM0-15 high halves, ZMM16-31
    if (__get_cpuid_max(0, nullptr) < 7) return f;
    unsigned b7 = 0, c7 = 0, d7 = 0;
    __cpuid_count(7, 0, a, b7, c7, d7);
    const unsigned max_subleaf = a;
    const bool avx_usable = avx && ymm_saved;
    f.avx2 = avx_usable && bit(b7, 5);
    f.fma = avx_usable && fma;
    f.f16c = avx_usable && f16c;
    f.bmi2 = bit(b7, 8);
    const bool avx512_usable = avx_usable && zmm_saved;
    f.avx512f = avx512_usable && bit(b7, 16);
    f.avx512dq = avx512_usable && bit(b7, 17);
    f.avx512bw = avx512_usable && bit(b7, 30);
    f.avx512vl = avx512_usable && bit(b7, 31);
    f.avx512vnni = avx512_usable && bit(c7, 11);
    if (max_subleaf >= 1) {
        unsigned a71 = 0;
        __cpuid_count(7, 1, a71, b, c, d);
        f.avx512bf16 = avx512_usable && bit(a71, 5);
    }
    const bool tiles_saved = (xcr & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
    f.amx_bf16 = f.avx512bf16 && tiles_saved && bit(d7, 22) && bit(d7, 24) && amx_permitted();
    return f;
}
#else
X86Features probe() { return {}; }
#endif

}  // namespace

const X86Features& x86_features() {
    static const X86Features features = probe();
    return features;
}

}  // namespace vllm::kernels
