// ops.h's kernels compiled for avx512 (flags from the file suffix, see CMakeLists.txt).
#include <immintrin.h>

#include <cstdint>

// widen_halves returns a 64-byte vector by value; it is inlined, so GCC's
// note on that ABI differing between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::avx512 {
namespace {
typedef float F32x16 __attribute__((vector_size(64)));
// 16 halves to 16 floats in one vcvtph2ps.
inline F32x16 widen_halves(const uint16_t* p) {
    return (F32x16)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
}  // namespace
}  // namespace vllm::kernels::avx512

#define VLLM_OPS_NAMESPACE avx512
#include "kernels/cpu/ops_impl.h"
