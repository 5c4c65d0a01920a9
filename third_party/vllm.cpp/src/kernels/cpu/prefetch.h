// Software prefetches, into L1 and into L2, for the kernels of every
// instruction-set build.
//
// By asm, not __builtin_prefetch: GCC 12 deletes a loop whose only effect is
// that builtin (C++ loops are assumed to finish, and the requests count as no
// effect), which had left decode attention with no prefetching at all; an asm
// statement stays. Prefetches never fault, so an address past the end of an
// object is fine.
#pragma once
#include <cstdint>

namespace vllm::kernels {

// Requests the cache line at p into L1, for a use a few hundred cycles on.
inline void prefetch_l1(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
    asm volatile("prefetcht0 (%0)" : : "r"(p));
#elif defined(__aarch64__)
    asm volatile("prfm pldl1keep, [%0]" : : "r"(p));
#else
    __builtin_prefetch(p, 0, 3);
#endif
}

// Requests the cache line at p into L2, for a use further on: streams that
// would evict L1's working set if they landed there.
inline void prefetch_l2(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
    asm volatile("prefetcht1 (%0)" : : "r"(p));
#elif defined(__aarch64__)
    asm volatile("prfm pldl2keep, [%0]" : : "r"(p));
#else
    __builtin_prefetch(p, 0, 2);
#endif
}

// Prefetches [base + offset, + bytes) into L2. The address may lie past the
// object base points into, so it is formed as an integer: pointer arithmetic
// out of an object is undefined even where the prefetch is not.
inline void prefetch_span(const uint8_t* base, int64_t offset, int64_t bytes) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(offset);
    for (int64_t off = 0; off < bytes; off += 64) prefetch_l2(reinterpret_cast<const void*>(p + uintptr_t(off)));
}

}  // namespace vllm::kernels
