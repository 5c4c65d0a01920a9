// ops.h's kernels compiled for scalar (flags from the file suffix, see CMakeLists.txt).
#include <cstdint>

#include "dtype/half.h"

// widen_halves returns a 64-byte vector by value; it is inlined, so GCC's
// note on that ABI differing between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::scalar {
namespace {
typedef float F32x16 __attribute__((vector_size(64)));
// 16 halves to 16 floats with the portable conversion (exact, like the
// hardware ones).
inline F32x16 widen_halves(const uint16_t* p) {
    F32x16 out;
    for (int i = 0; i < 16; ++i) out[i] = half_to_float(p[i]);
    return out;
}
inline F32x16 widen_int8(const int8_t* p) {
    F32x16 out;
    for (int i = 0; i < 16; ++i) out[i] = p[i];
    return out;
}
}  // namespace
}  // namespace vllm::kernels::scalar

#define VLLM_OPS_LANES 16
#define VLLM_OPS_VECTOR_REGISTERS 4
#define VLLM_OPS_NAMESPACE scalar
#include "kernels/cpu/ops_impl.h"
