// The scalar build: plain C++ reference implementations of every kernel.
// It runs on any CPU and is what the SIMD builds are tested against, so it
// favours clarity: one dot product per (row, token), block by block, in
// the same integer-then-scale arithmetic the SIMD kernels use.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/iq_blocks.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant_blocks.h"

namespace vllm::kernels {

namespace {

// Quantizes n values to q = round(x / d); stores d and sum(q).
void quantize_run(const float* x, int n, int8_t* q, float* d, int* sum) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const Q8Scale scale = q8_scale(amax);
    *sum = 0;
    for (int i = 0; i < n; ++i) {
        q[i] = static_cast<int8_t>(std::lrint(x[i] * scale.inv));
        *sum += q[i];
    }
    *d = scale.d;
}

void quantize_q8x32(const float* x, int64_t n, uint8_t* out) {
    const Q8x32Offsets o = q8x32_offsets(n);
    auto* qs = reinterpret_cast<int8_t*>(out);
    auto* d = reinterpret_cast<float*>(out + o.d);
    auto* s = reinterpret_cast<float*>(out + o.s);
    const int64_t nb = n / kQK;
    for (int64_t b = 0; b < nb; ++b) {
        int sum;
        quantize_run(x + b * kQK, kQK, qs + b * kQK, &d[b], &sum);
        s[b] = d[b] * static_cast<float>(sum);
    }
    q8x32_zero_pads(out, n);
}

void quantize_q8x256(const float* x, int64_t n, uint8_t* out) {
    const Q8x256Offsets o = q8x256_offsets(n);
    auto* qs = reinterpret_cast<int8_t*>(out);
    auto* d = reinterpret_cast<float*>(out + o.d);
    auto* bsums = reinterpret_cast<int16_t*>(out + o.bsums);
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int sum;
        quantize_run(x + b * kQKK, kQKK, qs + b * kQKK, &d[b], &sum);
        for (int g = 0; g < kQKK / 16; ++g) {
            int gs = 0;
            for (int l = 0; l < 16; ++l) gs += qs[b * kQKK + 16 * g + l];
            bsums[b * 16 + g] = static_cast<int16_t>(gs);
        }
    }
    q8x256_fill_sums(out, n);
}

// --- dot products of one weight row with one activation row --------------

// A row of a 32-element block format against Q8x32 activations:
// sum_b (d_b dx_b isum_b [+ m_b s_b]), isum_b = sum_l quant(block b, l) xq_l,
// the min term for the formats that have one (Q4_1, Q5_1). d_b is the
// block's fp16 d, or MXFP4's E8M0 scale.
template <class Block>
float block_scale(const Block& b) {
    if constexpr (std::is_same_v<Block, BlockMXFP4>) return e8m0_half_to_fp32(b.e);
    else return fp16_to_fp32(b.d);
}

template <class Block, class Quant>
float dot_blocks32(const uint8_t* w, const uint8_t* xrow, int64_t cols, Quant quant) {
    const auto* b = reinterpret_cast<const Block*>(w);
    const Q8x32Row x = q8x32_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQK; ++i) {
        int isum = 0;
        for (int l = 0; l < kQK; ++l) isum += quant(b[i], l) * x.qs[i * kQK + l];
        float block = block_scale(b[i]) * x.d[i] * static_cast<float>(isum);
        // sum_l (d q_l + m) x_l = d dx isum + m * (dx sum_l xq_l)
        if constexpr (std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>)
            block += fp16_to_fp32(b[i].m) * x.s[i];
        acc += block;
    }
    return acc;
}

float dot_q4_0(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockQ4_0>(w, xrow, cols, [](const BlockQ4_0& b, int l) { return nibble(b.qs, l) - 8; });
}

float dot_q4_1(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockQ4_1>(w, xrow, cols, [](const BlockQ4_1& b, int l) { return nibble(b.qs, l); });
}

float dot_q5_0(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockQ5_0>(w, xrow, cols,
                                   [](const BlockQ5_0& b, int l) { return q5_value(b.qh, b.qs, l) - 16; });
}

float dot_q5_1(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockQ5_1>(w, xrow, cols, [](const BlockQ5_1& b, int l) { return q5_value(b.qh, b.qs, l); });
}

float dot_q8_0(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockQ8_0>(w, xrow, cols, [](const BlockQ8_0& b, int l) { return static_cast<int>(b.qs[l]); });
}

float dot_iq4_nl(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockIQ4_NL>(w, xrow, cols,
                                     [](const BlockIQ4_NL& b, int l) { return static_cast<int>(kIq4Values[nibble(b.qs, l)]); });
}

// IQ4_XS against 32-element activation blocks: each sub-block is an
// IQ4_NL block whose scale is d * (sc - 32).
float dot_iq4_xs(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(w);
    const Q8x32Row x = q8x32_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < kQKK / kQK; ++j) {
            const int64_t blk = i * (kQKK / kQK) + j;
            int isum = 0;
            for (int l = 0; l < kQK; ++l) isum += kIq4Values[nibble(b[i].qs + 16 * j, l)] * x.qs[blk * kQK + l];
            acc += d * static_cast<float>(iq4_xs_scale(b[i], j)) * x.d[blk] * static_cast<float>(isum);
        }
    }
    return acc;
}

// sum_g scale(g) sum_{e in g} quant(e) xq_e over the 16 groups of 16
// elements of a super-block (Q2_K, Q3_K, Q6_K).
template <class Quant, class Scale>
int groups16_isum(const int8_t* xq, Quant quant, Scale scale) {
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int e = 16 * g; e < 16 * g + 16; ++e) s += quant(e) * xq[e];
        isum += scale(g) * s;
    }
    return isum;
}

// d dx sum_g sc_g (q . x)_g - dmin dx sum_g m_g sum(x)_g over 16-element
// groups g.
float dot_q2_k(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i) {
        const int isum = groups16_isum(
            x.qs + i * kQKK, [&](int e) { return q2_k_value(b[i], e); }, [&](int g) { return b[i].scales[g] & 0x0f; });
        int msum = 0;
        for (int g = 0; g < 16; ++g) msum += (b[i].scales[g] >> 4) * x.bsums[i * 16 + g];
        acc += fp16_to_fp32(b[i].d) * x.d[i] * static_cast<float>(isum) -
               fp16_to_fp32(b[i].dmin) * x.d[i] * static_cast<float>(msum);
    }
    return acc;
}

float dot_q3_k(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i) {
        int scales[16];
        q3_k_signed_scales(b[i].scales, scales);
        const int isum = groups16_isum(
            x.qs + i * kQKK, [&](int e) { return q3_k_value(b[i], e) - 4; }, [&](int g) { return scales[g]; });
        acc += fp16_to_fp32(b[i].d) * x.d[i] * static_cast<float>(isum);
    }
    return acc;
}

// Q4_K and Q5_K (qh == nullptr for Q4_K) for one super-block:
// d dx sum_j sc_j (q . x)_j - dmin dx sum_j m_j sum(x)_j.
float dot_k4_or_k5_block(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qh,
                         const uint8_t* qs, const int8_t* xq, const int16_t* bsums, float dx) {
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(scales, j, &sc, &m);
        const uint8_t* q = qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        int s = 0;
        for (int l = 0; l < 32; ++l) {
            int v = (q[l] >> shift) & 0x0f;
            if (qh) v |= ((qh[l] >> j) & 1) << 4;
            s += v * xq[32 * j + l];
        }
        isum += sc * s;
        msum += m * (bsums[2 * j] + bsums[2 * j + 1]);
    }
    return fp16_to_fp32(d16) * dx * static_cast<float>(isum) - fp16_to_fp32(dmin16) * dx * static_cast<float>(msum);
}

float dot_q4_k(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i)
        acc += dot_k4_or_k5_block(b[i].d, b[i].dmin, b[i].scales, nullptr, b[i].qs, x.qs + i * kQKK, x.bsums + i * 16,
                                  x.d[i]);
    return acc;
}

float dot_q5_k(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockQ5_K*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i)
        acc += dot_k4_or_k5_block(b[i].d, b[i].dmin, b[i].scales, b[i].qh, b[i].qs, x.qs + i * kQKK, x.bsums + i * 16,
                                  x.d[i]);
    return acc;
}

float dot_q6_k(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i) {
        const int isum = groups16_isum(
            x.qs + i * kQKK, [&](int e) { return q6_k_value(b[i], e) - 32; }, [&](int g) { return static_cast<int>(b[i].scales[g]); });
        acc += fp16_to_fp32(b[i].d) * x.d[i] * static_cast<float>(isum);
    }
    return acc;
}

// The codec formats (iq_blocks.h) against Q8x256 activations:
// d dx sum_k scale16_k (q . xq)_k over the 16 groups of 16.
template <class Codec>
float dot_codec(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* b = reinterpret_cast<const typename Codec::Block*>(w);
    const Q8x256Row x = q8x256_row(xrow, cols);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / kQKK; ++i) {
        const int8_t* xq = x.qs + i * kQKK;
        int isum = 0;
        for (int k = 0; k < 16; ++k) {
            int8_t q[16];
            codec_group8<Codec>(b[i], 2 * k, q);
            codec_group8<Codec>(b[i], 2 * k + 1, q + 8);
            int s = 0;
            for (int l = 0; l < 16; ++l) s += q[l] * xq[16 * k + l];
            isum += Codec::scale16(b[i], k) * s;
        }
        acc += Codec::d(b[i]) * x.d[i] * static_cast<float>(isum);
    }
    return acc;
}

float dot_mxfp4(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dot_blocks32<BlockMXFP4>(w, xrow, cols,
                                    [](const BlockMXFP4& b, int l) { return static_cast<int>(kMxfp4Values[nibble(b.qs, l)]); });
}

template <float (*Convert)(uint16_t)>
float dot_half(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    const auto* h = reinterpret_cast<const uint16_t*>(w);
    const auto* x = reinterpret_cast<const float*>(xrow);
    float acc = 0.0f;
    for (int64_t i = 0; i < cols; ++i) acc += Convert(h[i]) * x[i];
    return acc;
}

float dense_dot(const float* a, const float* b, int64_t n) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

float dot_f32_rows(const uint8_t* w, const uint8_t* xrow, int64_t cols) {
    return dense_dot(reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(xrow), cols);
}

void dense_axpy(float a, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <float (*Dot)(const uint8_t*, const uint8_t*, int64_t)>
void gemm(const GemmArgs& g) {
    for (int64_t t = g.tok_begin; t < g.tok_end; ++t)
        for (int64_t r = g.row_begin; r < g.row_end; ++r)
            g.y[t * g.y_stride + r] = Dot(g.w + r * g.w_stride, g.x + t * g.x_stride, g.cols);
}

}  // namespace

const IsaKernels& scalar_kernels() {
    static const IsaKernels k = [] {
        IsaKernels t{};
        t.name = "scalar";
        t.quantize_q8x32 = quantize_q8x32;
        t.quantize_q8x256 = quantize_q8x256;
        t.gemm[kSlotF32] = gemm<dot_f32_rows>;
        t.gemm[kSlotF16] = gemm<dot_half<fp16_to_fp32>>;
        t.gemm[kSlotBF16] = gemm<dot_half<bf16_to_fp32>>;
        t.gemm[kSlotQ4_0] = gemm<dot_q4_0>;
        t.gemm[kSlotQ4_1] = gemm<dot_q4_1>;
        t.gemm[kSlotQ5_0] = gemm<dot_q5_0>;
        t.gemm[kSlotQ5_1] = gemm<dot_q5_1>;
        t.gemm[kSlotQ8_0] = gemm<dot_q8_0>;
        t.gemm[kSlotIQ4_NL] = gemm<dot_iq4_nl>;
        t.gemm[kSlotIQ4_XS] = gemm<dot_iq4_xs>;
        t.gemm[kSlotQ2_K] = gemm<dot_q2_k>;
        t.gemm[kSlotQ3_K] = gemm<dot_q3_k>;
        t.gemm[kSlotQ4_K] = gemm<dot_q4_k>;
        t.gemm[kSlotQ5_K] = gemm<dot_q5_k>;
        t.gemm[kSlotQ6_K] = gemm<dot_q6_k>;
        t.gemm[kSlotIQ2_XXS] = gemm<dot_codec<IQ2_XXSCodec>>;
        t.gemm[kSlotIQ2_XS] = gemm<dot_codec<IQ2_XSCodec>>;
        t.gemm[kSlotIQ2_S] = gemm<dot_codec<IQ2_SCodec>>;
        t.gemm[kSlotIQ3_XXS] = gemm<dot_codec<IQ3_XXSCodec>>;
        t.gemm[kSlotIQ3_S] = gemm<dot_codec<IQ3_SCodec>>;
        t.gemm[kSlotIQ1_S] = gemm<dot_codec<IQ1_SCodec>>;
        t.gemm[kSlotIQ1_M] = gemm<dot_codec<IQ1_MCodec>>;
        t.gemm[kSlotTQ1_0] = gemm<dot_codec<TQ1_0Codec>>;
        t.gemm[kSlotTQ2_0] = gemm<dot_codec<TQ2_0Codec>>;
        t.gemm[kSlotMXFP4] = gemm<dot_mxfp4>;
        t.dot_f32 = dense_dot;
        t.axpy_f32 = dense_axpy;
        scalar::set_ops(t);
        return t;
    }();
    return k;
}

}  // namespace vllm::kernels
