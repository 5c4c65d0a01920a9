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
// 16 int8 to 16 floats: one sign extension (vpmovsxbd), one conversion.
inline F32x16 widen_int8(const int8_t* p) {
    return (F32x16)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
}  // namespace
}  // namespace vllm::kernels::avx512

#define VLLM_OPS_LANES 16
#define VLLM_OPS_VECTOR_REGISTERS 32
#define VLLM_OPS_NAMESPACE avx512
#include "kernels/cpu/ops_impl.h"
