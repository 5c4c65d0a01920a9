// ops.h's kernels compiled for avx2 (flags from the file suffix, see CMakeLists.txt).
// F16C (vcvtph2ps) is compiled in and required at run time with AVX2
// (dispatch.cpp's cpu_level). Vectors of 8 floats, one register: GCC
// lowers wider generic vectors on AVX2 poorly (through the stack).
#include <immintrin.h>

#include <cstdint>

namespace vllm::kernels::avx2 {
namespace {
typedef float F32x8 __attribute__((vector_size(32)));
// 8 halves to 8 floats: one F16C conversion.
inline F32x8 widen_halves(const uint16_t* p) {
    return (F32x8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// 8 int8 to 8 floats: one sign extension, one conversion.
inline F32x8 widen_int8(const int8_t* p) {
    return (F32x8)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
}  // namespace
}  // namespace vllm::kernels::avx2

#define VLLM_OPS_LANES 8
#define VLLM_OPS_VECTOR_REGISTERS 16
#define VLLM_OPS_NAMESPACE avx2
#include "kernels/cpu/ops_impl.h"
