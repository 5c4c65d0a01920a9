// The activation quantizers (act_layout.h) against a vector layer V. They
// must produce exactly the scalar build's bytes: same scale function
// (q8_scale), same rounding (to nearest even), integer sums.
// Include only from *_avx2.cpp / *_avx512.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/quant_blocks.h"

namespace vllm::kernels {
namespace {

template <class V>
float abs_max(const float* x, int n) {
    typename V::F m = V::abs(V::load_f32(x));
    for (int i = V::kFloats; i < n; i += V::kFloats) m = V::max(m, V::abs(V::load_f32(x + i)));
    return V::hmax(m);
}

// Quantizes 16 floats into q; returns them as int32 for the sums.
template <class V>
typename V::I quantize_16(const float* x, typename V::F inv, int8_t* q) {
    static_assert(V::kFloats == 16, "one F per 16 activations");
    const typename V::I v = V::round_i32(V::mul(V::load_f32(x), inv));
    V::store_i8(q, v);
    return v;
}

template <class V>
void quantize_q8x32(const float* x, int64_t n, uint8_t* out) {
    const Q8x32Offsets o = q8x32_offsets(n);
    auto* qs = reinterpret_cast<int8_t*>(out);
    auto* d = reinterpret_cast<float*>(out + o.d);
    auto* s = reinterpret_cast<float*>(out + o.s);
    const int64_t nb = n / kQK;
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + b * kQK;
        const Q8Scale scale = q8_scale(abs_max<V>(xb, kQK));
        const typename V::F inv = V::set1(scale.inv);
        const typename V::I sum = V::add32(quantize_16<V>(xb, inv, qs + b * kQK), quantize_16<V>(xb + 16, inv, qs + b * kQK + 16));
        d[b] = scale.d;
        s[b] = scale.d * static_cast<float>(V::hsum_i32(sum));
    }
    q8x32_zero_pads(out, n);
}

template <class V>
void quantize_q8x256(const float* x, int64_t n, uint8_t* out) {
    const Q8x256Offsets o = q8x256_offsets(n);
    auto* qs = reinterpret_cast<int8_t*>(out);
    auto* d = reinterpret_cast<float*>(out + o.d);
    auto* bsums = reinterpret_cast<int16_t*>(out + o.bsums);
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const float* xb = x + b * kQKK;
        const Q8Scale scale = q8_scale(abs_max<V>(xb, kQKK));
        const typename V::F inv = V::set1(scale.inv);
        for (int g = 0; g < kQKK / 16; ++g)
            bsums[b * 16 + g] = static_cast<int16_t>(V::hsum_i32(quantize_16<V>(xb + 16 * g, inv, qs + b * kQKK + 16 * g)));
        d[b] = scale.d;
    }
    q8x256_fill_sums(out, n);
}

}  // namespace
}  // namespace vllm::kernels
