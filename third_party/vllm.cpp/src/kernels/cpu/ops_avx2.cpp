// ops.h's kernels compiled for avx2 (flags from the file suffix, see CMakeLists.txt).
// F16C (vcvtph2ps) is compiled in and required at run time with AVX2
// (dispatch.cpp's cpu_level).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// widen_halves returns a 64-byte vector by value; it is inlined, so GCC's
// note on that ABI differing between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::avx2 {
namespace {
typedef float F32x16 __attribute__((vector_size(64)));
// 16 halves to 16 floats: two 8-wide F16C conversions.
inline F32x16 widen_halves(const uint16_t* p) {
    const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
    F32x16 out;
    std::memcpy(&out, &lo, sizeof lo);
    std::memcpy(reinterpret_cast<char*>(&out) + sizeof lo, &hi, sizeof hi);
    return out;
}
// 16 int8 to 16 floats: two 8-wide sign extensions and conversions.
inline F32x16 widen_int8(const int8_t* p) {
    const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    const __m256 hi =
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8))));
    F32x16 out;
    std::memcpy(&out, &lo, sizeof lo);
    std::memcpy(reinterpret_cast<char*>(&out) + sizeof lo, &hi, sizeof hi);
    return out;
}
}  // namespace
}  // namespace vllm::kernels::avx2

#define VLLM_OPS_NAMESPACE avx2
#include "kernels/cpu/ops_impl.h"
