// How a matmul's activation rows are presented to the dot products. The
// quantized weight types take the activations quantized once per matmul to
// 8 bits (symmetric, q = round(x / d) with d = amax / 127, so q is never
// -128 and sign tricks stay exact):
//
//   Q8x32  (for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, IQ4_XS, MXFP4): per 32 elements a float scale d and
//          s = d * sum(q), the latter carrying Q4_1's and Q5_1's min term. Laid out
//          per row as qs[nb2 * 32] | d[nb16] | s[nb16], with the block
//          count nb rounded up to even (nb2: the SIMD kernels take blocks
//          in pairs) and to 16 (nb16: they read 16 values at once). Pad
//          blocks are zeros (q = 0, d = s = 0), so they add nothing.
//   Q8x256 (for the K-quants Q2_K..Q6_K, the IQ1/IQ2/IQ3 codebook formats
//          and TQ1_0, TQ2_0, as llama.cpp pairs them with Q8_K): per 256 elements a float scale d, the sums
//          of q over each 16 elements (bsums) for the K-quants' mins and
//          offsets, and again s = d * sum(q) per 32 elements. Laid out as
//          qs[n] | d[n / 256] | bsums[n / 16] | s[nb16].
//
//   BF16   (for BF16 on builds with AVX-512 BF16, whose vdpbf16ps multiplies
//          bf16 by bf16): each element rounded once to bf16 (to nearest
//          even, as llama.cpp does for its BF16 matmuls), laid out as
//          x[n32] (n32: the element count rounded up to 32, pads zero).
//          That keeps 8 of a float's 24 significant bits (|x - bf16(x)| <=
//          2^-9 |x|); bf16 products are exact in float. On the SmolLM2
//          correctness prompts the logits' teacher-forced error against the
//          float reference went from 0.019-0.026 (mean) with float-accurate
//          activations (two bf16 halves, twice the dot products) to
//          0.032-0.039, against 0.14-0.16 for the 8-bit activations of the
//          quantized formats, for about 1.5x the interleaved GEMM's speed.
//
// The float types (F32, F16, and BF16 elsewhere) take the float rows as
// they are. Rows are padded to 64 bytes so every row starts on a cache line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtype/ggml_type.h"

namespace vllm::kernels {

enum class ActKind { F32, Q8x32, Q8x256, BF16 };

static inline ActKind act_kind(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
        case GgmlType::MXFP4: return ActKind::Q8x32;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M:
        case GgmlType::TQ1_0:
        case GgmlType::TQ2_0: return ActKind::Q8x256;
        default: return ActKind::F32;
    }
}

static inline size_t round_up_64(size_t n) { return (n + 63) & ~static_cast<size_t>(63); }

static inline int64_t q8x32_blocks_padded(int64_t cols) { return (cols / 32 + 1) & ~int64_t{1}; }
// nb16: the number of 32-element blocks rounded up to 16.
static inline int64_t blocks32_padded16(int64_t cols) { return (cols / 32 + 15) & ~int64_t{15}; }

static inline int64_t elements_padded32(int64_t cols) { return (cols + 31) & ~int64_t{31}; }

// Bytes per activation row of `cols` elements in the given layout.
static inline size_t act_row_bytes(ActKind kind, int64_t cols) {
    switch (kind) {
        case ActKind::BF16: return round_up_64(static_cast<size_t>(elements_padded32(cols)) * sizeof(uint16_t));
        case ActKind::Q8x32:
            return round_up_64(static_cast<size_t>(q8x32_blocks_padded(cols)) * 32 +
                               static_cast<size_t>(blocks32_padded16(cols)) * 2 * sizeof(float));
        case ActKind::Q8x256:
            return round_up_64(static_cast<size_t>(cols) + static_cast<size_t>(cols / 256) * sizeof(float) +
                               static_cast<size_t>(cols / 16) * sizeof(int16_t) +
                               static_cast<size_t>(blocks32_padded16(cols)) * sizeof(float));
        case ActKind::F32: break;
    }
    return static_cast<size_t>(cols) * sizeof(float);
}

// The 8-bit scale of a run of activations whose largest magnitude is amax,
// and its inverse. Every build computes it with this one function, so all
// quantize identically.
struct Q8Scale {
    float d;
    float inv;
};

static inline Q8Scale q8_scale(float amax) {
    const float d = amax / 127.0f;
    return {d, d != 0.0f ? 1.0f / d : 0.0f};
}

// Byte offsets of the parts of a row after qs (which starts at 0).
struct Q8x32Offsets {
    size_t d, s;
};
struct Q8x256Offsets {
    size_t d, bsums, s;
};

static inline Q8x32Offsets q8x32_offsets(int64_t cols) {
    const size_t qs_bytes = static_cast<size_t>(q8x32_blocks_padded(cols)) * 32;
    return {qs_bytes, qs_bytes + static_cast<size_t>(blocks32_padded16(cols)) * sizeof(float)};
}

// Writes the pad blocks of a Q8x32 row (the quantizers fill the rest).
static inline void q8x32_zero_pads(uint8_t* row, int64_t cols) {
    const Q8x32Offsets o = q8x32_offsets(cols);
    const int64_t nb = cols / 32;
    const int64_t pads = blocks32_padded16(cols) - nb;
    std::memset(row + nb * 32, 0, o.d - static_cast<size_t>(nb) * 32);
    std::memset(row + o.d + nb * sizeof(float), 0, static_cast<size_t>(pads) * sizeof(float));
    std::memset(row + o.s + nb * sizeof(float), 0, static_cast<size_t>(pads) * sizeof(float));
}

static inline Q8x256Offsets q8x256_offsets(int64_t cols) {
    const size_t n = static_cast<size_t>(cols);
    const size_t bsums = n + n / 256 * sizeof(float);
    return {n, bsums, bsums + n / 16 * sizeof(int16_t)};
}

// Writes a Q8x256 row's s from its d and bsums (the quantizers fill those),
// so every build derives them identically.
static inline void q8x256_fill_sums(uint8_t* row, int64_t cols) {
    const Q8x256Offsets o = q8x256_offsets(cols);
    const auto* d = reinterpret_cast<const float*>(row + o.d);
    const auto* bsums = reinterpret_cast<const int16_t*>(row + o.bsums);
    auto* s = reinterpret_cast<float*>(row + o.s);
    for (int64_t b = 0; b < cols / 32; ++b) s[b] = d[b / 8] * static_cast<float>(bsums[2 * b] + bsums[2 * b + 1]);
    for (int64_t b = cols / 32; b < blocks32_padded16(cols); ++b) s[b] = 0.0f;
}

struct Q8x32Row {
    const int8_t* qs;
    const float* d;
    const float* s;
};

struct Q8x256Row {
    const int8_t* qs;
    const float* d;
    const int16_t* bsums;
    const float* s;
};

static inline Q8x32Row q8x32_row(const uint8_t* row, int64_t cols) {
    const Q8x32Offsets o = q8x32_offsets(cols);
    return {reinterpret_cast<const int8_t*>(row), reinterpret_cast<const float*>(row + o.d),
            reinterpret_cast<const float*>(row + o.s)};
}

static inline Q8x256Row q8x256_row(const uint8_t* row, int64_t cols) {
    const Q8x256Offsets o = q8x256_offsets(cols);
    return {reinterpret_cast<const int8_t*>(row), reinterpret_cast<const float*>(row + o.d),
            reinterpret_cast<const int16_t*>(row + o.bsums), reinterpret_cast<const float*>(row + o.s)};
}

}  // namespace vllm::kernels
