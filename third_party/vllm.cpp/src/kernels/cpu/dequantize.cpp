// dequantize_row: the reference expansion of every supported type, written
// to match ggml's (and gguf-py's) arithmetic so results agree bit for bit.
// Used for embedding lookups and by the tests; matmuls never expand rows.
#include <string>

#include "kernels/cpu/iq_blocks.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant_blocks.h"
#include "util/error.h"

namespace vllm::kernels {

namespace {

void dequantize_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(nibble(b[i].qs, l) - 8);
    }
}

void dequantize_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        const float m = fp16_to_fp32(b[i].m);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(nibble(b[i].qs, l)) + m;
    }
}

void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(q5_value(b[i].qh, b[i].qs, l) - 16);
    }
}

void dequantize_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        const float m = fp16_to_fp32(b[i].m);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(q5_value(b[i].qh, b[i].qs, l)) + m;
    }
}

// 16 nibbles laid out as in Q4_0, looked up in the IQ4 grid and scaled.
void dequantize_iq4_run(const uint8_t* qs, float d, float* y) {
    for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(kIq4Values[nibble(qs, l)]);
}

void dequantize_iq4_xs(const BlockIQ4_XS* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < kQKK / kQK; ++j)
            dequantize_iq4_run(b[i].qs + 16 * j, d * static_cast<float>(iq4_xs_scale(b[i], j)), y + kQK * j);
    }
}

void dequantize_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(b[i].qs[l]);
    }
}

// Q4_K and Q5_K share everything but the fifth bit (qh == nullptr: none).
void dequantize_k4_or_k5(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qh,
                         const uint8_t* qs, float* y) {
    const float d = fp16_to_fp32(d16);
    const float dmin = fp16_to_fp32(dmin16);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(scales, j, &sc, &m);
        const float scale = d * static_cast<float>(sc);
        const float min = dmin * static_cast<float>(m);
        const uint8_t* q = qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) {
            int v = (q[l] >> shift) & 0x0f;
            if (qh) v |= ((qh[l] >> j) & 1) << 4;
            y[32 * j + l] = scale * static_cast<float>(v) - min;
        }
    }
}

void dequantize_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        const float dmin = fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < kQKK; ++e) {
            const float scale = d * static_cast<float>(b[i].scales[e / 16] & 0x0f);
            const float min = dmin * static_cast<float>(b[i].scales[e / 16] >> 4);
            y[e] = scale * static_cast<float>(q2_k_value(b[i], e)) - min;
        }
    }
}

void dequantize_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        int scales[16];
        q3_k_signed_scales(b[i].scales, scales);
        for (int e = 0; e < kQKK; ++e)
            y[e] = d * static_cast<float>(scales[e / 16]) * static_cast<float>(q3_k_value(b[i], e) - 4);
    }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQKK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < kQKK; ++e)
            y[e] = d * static_cast<float>(b[i].scales[e / 16]) * static_cast<float>(q6_k_value(b[i], e) - 32);
    }
}

// The codec formats (iq_blocks.h): w = d * scale16 * q.
template <class Codec>
void dequantize_codec(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const typename Codec::Block*>(src);
    for (int64_t i = 0; i < nb; ++i, y += kQKK) {
        const float d = Codec::d(b[i]);
        for (int g = 0; g < kQKK / 8; ++g) {
            int8_t q[8];
            codec_group8<Codec>(b[i], g, q);
            const float dl = d * static_cast<float>(Codec::scale16(b[i], g / 2));
            for (int j = 0; j < 8; ++j) y[8 * g + j] = dl * static_cast<float>(q[j]);
        }
    }
}

void dequantize_mxfp4(const BlockMXFP4* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = e8m0_half_to_fp32(b[i].e);
        for (int l = 0; l < kQK; ++l) y[l] = d * static_cast<float>(kMxfp4Values[nibble(b[i].qs, l)]);
    }
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    switch (type) {
        case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
        case GgmlType::F16:
        case GgmlType::BF16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = type == GgmlType::F16 ? fp16_to_fp32(h[i]) : bf16_to_fp32(h[i]);
            return;
        }
        case GgmlType::Q4_0: dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n / kQK); return;
        case GgmlType::Q4_1: dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n / kQK); return;
        case GgmlType::Q5_0: dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, n / kQK); return;
        case GgmlType::Q5_1: dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, n / kQK); return;
        case GgmlType::Q8_0: dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n / kQK); return;
        case GgmlType::IQ4_NL: {
            const auto* b = static_cast<const BlockIQ4_NL*>(src);
            for (int64_t i = 0; i < n / kQK; ++i) dequantize_iq4_run(b[i].qs, fp16_to_fp32(b[i].d), dst + i * kQK);
            return;
        }
        case GgmlType::IQ4_XS: dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n / kQKK); return;
        case GgmlType::Q2_K: dequantize_q2_k(static_cast<const BlockQ2_K*>(src), dst, n / kQKK); return;
        case GgmlType::Q3_K: dequantize_q3_k(static_cast<const BlockQ3_K*>(src), dst, n / kQKK); return;
        case GgmlType::Q4_K:
            for (int64_t i = 0; i < n / kQKK; ++i) {
                const auto& b = reinterpret_cast<const BlockQ4_K*>(p)[i];
                dequantize_k4_or_k5(b.d, b.dmin, b.scales, nullptr, b.qs, dst + i * kQKK);
            }
            return;
        case GgmlType::Q5_K:
            for (int64_t i = 0; i < n / kQKK; ++i) {
                const auto& b = reinterpret_cast<const BlockQ5_K*>(p)[i];
                dequantize_k4_or_k5(b.d, b.dmin, b.scales, b.qh, b.qs, dst + i * kQKK);
            }
            return;
        case GgmlType::Q6_K: dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, n / kQKK); return;
        case GgmlType::IQ2_XXS: dequantize_codec<IQ2_XXSCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ2_XS: dequantize_codec<IQ2_XSCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ2_S: dequantize_codec<IQ2_SCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ3_XXS: dequantize_codec<IQ3_XXSCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ3_S: dequantize_codec<IQ3_SCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ1_S: dequantize_codec<IQ1_SCodec>(src, dst, n / kQKK); return;
        case GgmlType::IQ1_M: dequantize_codec<IQ1_MCodec>(src, dst, n / kQKK); return;
        case GgmlType::TQ1_0: dequantize_codec<TQ1_0Codec>(src, dst, n / kQKK); return;
        case GgmlType::TQ2_0: dequantize_codec<TQ2_0Codec>(src, dst, n / kQKK); return;
        case GgmlType::MXFP4: dequantize_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n / kQK); return;
        default: break;
    }
    throw_invalid_argument("dequantize_row: unsupported type " + ggml_type_name(static_cast<uint32_t>(type)));
}

}  // namespace vllm::kernels
