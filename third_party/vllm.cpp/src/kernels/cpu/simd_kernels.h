// Everything one SIMD build provides, as an IsaKernels table: the matmul
// (simd_gemm.h) for every weight format, the interleaved matmuls
// (simd_interleaved.h) where the layer has kInterleavedTokens (Q8_0's
// through the signed dot product, kInterleavedSignedTokens a tile, where
// dot_part cannot take u8 up to 255) or, for F16 and BF16,
// kFloatInterleavedTokens, the activation quantizers
// (simd_quantize.h) and the dense float helpers below. Included once per
// build by kernels_avx2.cpp / kernels_avx512.cpp after their vector layer.
#pragma once
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd_formats.h"
#include "kernels/cpu/simd_formats_iq.h"
#include "kernels/cpu/simd_gemm.h"
#include "kernels/cpu/simd_interleaved.h"
#include "kernels/cpu/simd_quantize.h"

namespace vllm::kernels {
namespace {

template <class V>
float dense_dot(const float* a, const float* b, int64_t n) {
    constexpr int64_t k = V::kFloats;
    // Four accumulators hide the FMA latency.
    typename V::Acc acc[4] = {V::acc_zero(), V::acc_zero(), V::acc_zero(), V::acc_zero()};
    int64_t i = 0;
    for (; i + 4 * k <= n; i += 4 * k)
        for (int j = 0; j < 4; ++j) acc[j] = V::fma(V::load_f32(a + i + j * k), V::load_f32(b + i + j * k), acc[j]);
    for (; i + k <= n; i += k) acc[0] = V::fma(V::load_f32(a + i), V::load_f32(b + i), acc[0]);
    float sum = V::hsum(V::acc_add(V::acc_add(acc[0], acc[1]), V::acc_add(acc[2], acc[3])));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

template <class V>
void dense_axpy(float a, const float* x, float* y, int64_t n) {
    const typename V::F av = V::set1(a);
    int64_t i = 0;
    for (; i + V::kFloats <= n; i += V::kFloats) V::store_f32(y + i, V::fma_f(av, V::load_f32(x + i), V::load_f32(y + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}

template <class V>
IsaKernels make_isa_kernels() {
    IsaKernels k{};
    k.name = V::kName;
    k.quantize_q8x32 = quantize_q8x32<V>;
    k.quantize_q8x256 = quantize_q8x256<V>;
    k.gemm[kSlotF32] = Gemm<V, FloatFormat<V, GgmlType::F32>>::run;
    k.gemm[kSlotF16] = Gemm<V, FloatFormat<V, GgmlType::F16>>::run;
    k.gemm[kSlotBF16] = Gemm<V, FloatFormat<V, GgmlType::BF16>>::run;
    k.gemm[kSlotQ4_0] = Gemm<V, Q4_0Format<V>>::run;
    k.gemm[kSlotQ4_1] = Gemm<V, Q4_1Format<V>>::run;
    k.gemm[kSlotQ5_0] = Gemm<V, Q5_0Format<V>>::run;
    k.gemm[kSlotQ5_1] = Gemm<V, Q5_1Format<V>>::run;
    k.gemm[kSlotQ8_0] = Gemm<V, Q8_0Format<V>>::run;
    k.gemm[kSlotIQ4_NL] = Gemm<V, IQ4_NLFormat<V>>::run;
    k.gemm[kSlotIQ4_XS] = Gemm<V, IQ4_XSFormat<V>>::run;
    k.gemm[kSlotQ2_K] = Gemm<V, Q2_KFormat<V>>::run;
    k.gemm[kSlotQ3_K] = Gemm<V, Q3_KFormat<V>>::run;
    k.gemm[kSlotQ4_K] = Gemm<V, Q4_KFormat<V>>::run;
    k.gemm[kSlotQ5_K] = Gemm<V, Q5_KFormat<V>>::run;
    k.gemm[kSlotQ6_K] = Gemm<V, Q6_KFormat<V>>::run;
    k.gemm[kSlotIQ2_XXS] = Gemm<V, CodecFormat<V, IQ2_XXSCodec>>::run;
    k.gemm[kSlotIQ2_XS] = Gemm<V, CodecFormat<V, IQ2_XSCodec>>::run;
    k.gemm[kSlotIQ2_S] = Gemm<V, CodecFormat<V, IQ2_SCodec>>::run;
    k.gemm[kSlotIQ3_XXS] = Gemm<V, CodecFormat<V, IQ3_XXSCodec>>::run;
    k.gemm[kSlotIQ3_S] = Gemm<V, CodecFormat<V, IQ3_SCodec>>::run;
    k.gemm[kSlotIQ1_S] = Gemm<V, CodecFormat<V, IQ1_SCodec>>::run;
    k.gemm[kSlotIQ1_M] = Gemm<V, CodecFormat<V, IQ1_MCodec>>::run;
    k.gemm[kSlotTQ1_0] = Gemm<V, CodecFormat<V, TQ1_0Codec>>::run;
    k.gemm[kSlotTQ2_0] = Gemm<V, CodecFormat<V, TQ2_0Codec>>::run;
    k.gemm[kSlotMXFP4] = Gemm<V, MXFP4Format<V>>::run;
    if constexpr (V::kInterleavedTokens > 0) {
        k.gemm_interleaved[kSlotQ4_0] = gemm_interleaved<V, InterleavedQ4_0<V>>;
        k.gemm_interleaved[kSlotQ4_1] = gemm_interleaved<V, InterleavedQ4_1<V>>;
        k.gemm_interleaved[kSlotQ5_0] = gemm_interleaved<V, InterleavedQ5_0<V>>;
        k.gemm_interleaved[kSlotQ5_1] = gemm_interleaved<V, InterleavedQ5_1<V>>;
        k.gemm_interleaved[kSlotQ4_K] = gemm_interleaved_super<V, InterleavedQ4_K<V>>;
        k.gemm_interleaved[kSlotQ5_K] = gemm_interleaved_super<V, InterleavedQ5_K<V>>;
        k.gemm_interleaved[kSlotQ6_K] = gemm_interleaved_super<V, InterleavedQ6_K<V>>;
        if constexpr (V::dot_terms(255) > 0) {
            k.gemm_interleaved[kSlotQ8_0] = gemm_interleaved<V, InterleavedQ8_0<V>>;
            k.q8_0_bytes = Q8_0Bytes::kPlus128;
        } else {
            k.gemm_interleaved[kSlotQ8_0] = gemm_interleaved<V, InterleavedQ8_0Signed<V>, V::kInterleavedSignedTokens>;
            k.q8_0_bytes = Q8_0Bytes::kSigned;
        }
    }
    if constexpr (V::kFloatInterleavedTokens > 0) {
        k.gemm_interleaved[kSlotF16] = gemm_interleaved_float<V, InterleavedF16<V>>;
        k.gemm_interleaved[kSlotBF16] = gemm_interleaved_float<V, InterleavedBF16<V>>;
    }
    // A type without a SIMD format in this build runs the scalar build's
    // dot products: the activation layouts are the same in every build.
    const IsaKernels& scalar = scalar_kernels();
    for (int slot = 0; slot < kNumSlots; ++slot)
        if (k.gemm[slot] == nullptr) k.gemm[slot] = scalar.gemm[slot];
    k.dot_f32 = dense_dot<V>;
    k.axpy_f32 = dense_axpy<V>;
    return k;
}

}  // namespace
}  // namespace vllm::kernels
