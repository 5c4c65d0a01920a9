// ops.h's kernels compiled for neon (baseline AArch64 flags: NEON is part of it, see CMakeLists.txt).
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

// widen_halves returns a 64-byte vector by value; it is inlined, so GCC's
// note on that ABI differing between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::neon {
namespace {
typedef float F32x16 __attribute__((vector_size(64)));
// 16 halves to 16 floats: four 4-wide FCVTL conversions (baseline AArch64).
inline F32x16 widen_halves(const uint16_t* p) {
    F32x16 out;
    for (int i = 0; i < 4; ++i) {
        const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 4 * i)));
        std::memcpy(reinterpret_cast<char*>(&out) + i * sizeof f, &f, sizeof f);
    }
    return out;
}
// 16 int8 to 16 floats: widened to 16 and 32 bits (SXTL), then converted.
inline F32x16 widen_int8(const int8_t* p) {
    const int8x16_t q = vld1q_s8(p);
    const int16x8_t halves[2] = {vmovl_s8(vget_low_s8(q)), vmovl_s8(vget_high_s8(q))};
    F32x16 out;
    for (int i = 0; i < 4; ++i) {
        const int16x4_t h = i % 2 ? vget_high_s16(halves[i / 2]) : vget_low_s16(halves[i / 2]);
        const float32x4_t f = vcvtq_f32_s32(vmovl_s16(h));
        std::memcpy(reinterpret_cast<char*>(&out) + i * sizeof f, &f, sizeof f);
    }
    return out;
}
}  // namespace
}  // namespace vllm::kernels::neon

#define VLLM_OPS_LANES 16
#define VLLM_OPS_VECTOR_REGISTERS 8
#define VLLM_OPS_NAMESPACE neon
#include "kernels/cpu/ops_impl.h"
