// The on-disk block layouts of the quantized ggml types (as GGUF stores
// them), and the scalar conversions every kernel shares.
//
// Helpers here are `static inline` on purpose: this header is included by
// files compiled with different ISA flags, and an ordinary inline function
// would be emitted by each and merged by the linker, possibly keeping an
// AVX-512 build of it for a machine without AVX-512.
#pragma once
#include <cstdint>
#include <cstring>

namespace vllm::kernels {

constexpr int kQK = 32;    // elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL
constexpr int kQKK = 256;  // elements per super-block of the K-quants

// w = d * (q - 8); element i < 16 is the low nibble of qs[i], element
// i >= 16 the high nibble of qs[i - 16].
struct BlockQ4_0 {
    uint16_t d;  // fp16
    uint8_t qs[kQK / 2];
};

// w = d * q + m, nibbles laid out as in Q4_0.
struct BlockQ4_1 {
    uint16_t d;  // fp16
    uint16_t m;  // fp16
    uint8_t qs[kQK / 2];
};

// w = d * (q - 16), q = the nibble (laid out as in Q4_0) plus 16 times
// bit i of qh (a little-endian uint32) for element i.
struct BlockQ5_0 {
    uint16_t d;  // fp16
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// w = d * q + m, q as in Q5_0.
struct BlockQ5_1 {
    uint16_t d;  // fp16
    uint16_t m;  // fp16
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// w = d * q
struct BlockQ8_0 {
    uint16_t d;  // fp16
    int8_t qs[kQK];
};

// 16 sub-blocks of 16: w = d * sc * q - dmin * m, with scales[i / 16]
// holding sc in its low nibble and m in its high one. Element
// 128h + 32k + l (k = 0..3) is bits 2k, 2k + 1 of qs[32h + l].
struct BlockQ2_K {
    uint8_t scales[kQKK / 16];
    uint8_t qs[kQKK / 4];
    uint16_t d;     // fp16
    uint16_t dmin;  // fp16
};

// 16 sub-blocks of 16: w = d * (sc - 32) * (q - 4), sc 6 bits packed into
// `scales` (see q3_k_scales). Element 128h + 32k + l has the low two bits
// of q at bits 2k of qs[32h + l] and the third at bit 4h + k of hmask[l].
struct BlockQ3_K {
    uint8_t hmask[kQKK / 8];
    uint8_t qs[kQKK / 4];
    uint8_t scales[12];
    uint16_t d;  // fp16
};

// 8 sub-blocks of 32: w = d * sc[j] * q - dmin * m[j], with 6-bit sc and m
// packed into `scales` (see k_scale_min). Byte qs[32c + l] holds element
// 64c + l in its low nibble and element 64c + 32 + l in its high nibble.
struct BlockQ4_K {
    uint16_t d;     // fp16
    uint16_t dmin;  // fp16
    uint8_t scales[12];
    uint8_t qs[kQKK / 2];
};

// As Q4_K plus a fifth bit: bit j of qh[l] is the high bit of element
// 32j + l.
struct BlockQ5_K {
    uint16_t d;     // fp16
    uint16_t dmin;  // fp16
    uint8_t scales[12];
    uint8_t qh[kQKK / 8];
    uint8_t qs[kQKK / 2];
};

// 16 sub-blocks of 16: w = d * scales[i / 16] * (q - 32), q 6 bits. In
// half h (elements 128h..128h+127), element 128h + 32k + l (k = 0..3) has
// its low 4 bits in ql[64h + 32(k & 1) + l] (low nibble for k < 2, high
// nibble otherwise) and its top 2 bits at bit 2k of qh[32h + l].
struct BlockQ6_K {
    uint8_t ql[kQKK / 2];
    uint8_t qh[kQKK / 4];
    int8_t scales[kQKK / 16];
    uint16_t d;  // fp16
};

// w = d * kIq4Values[q], nibbles laid out as in Q4_0.
struct BlockIQ4_NL {
    uint16_t d;  // fp16
    uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32, each an IQ4_NL block without its own fp16:
// w = d * (sc[j] - 32) * kIq4Values[q], sc 6 bits (see iq4_xs_scale),
// sub-block j's nibbles in qs[16j .. 16j + 15].
struct BlockIQ4_XS {
    uint16_t d;  // fp16
    uint16_t scales_h;
    uint8_t scales_l[kQKK / 64];
    uint8_t qs[kQKK / 2];
};

// The non-uniform grid IQ4_NL and IQ4_XS index with their nibbles.
alignas(16) constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 layout");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 layout");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 layout");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 layout");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 layout");
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K layout");
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K layout");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K layout");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K layout");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K layout");
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL layout");
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS layout");

static inline float bits_to_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    const uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24, exact in float.
        const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf / nan
    return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

static inline float bf16_to_fp32(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block.
static inline void k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

// The 16 6-bit scales of a Q3_K block, still offset by 32, as bytes
// (lo: scales 0..7, hi: 8..15). Scale i has its low 4 bits in the low
// (i < 8) or high nibble of scales[i % 8] and its top 2 at bit 2 (i / 4)
// of scales[8 + i % 4].
static inline void q3_k_scales(const uint8_t* scales, uint64_t* lo, uint64_t* hi) {
    uint32_t w[3];
    std::memcpy(w, scales, sizeof w);
    const uint32_t top = w[2];
    const uint32_t s0 = (w[0] & 0x0f0f0f0fu) | ((top & 0x03030303u) << 4);
    const uint32_t s1 = (w[1] & 0x0f0f0f0fu) | (((top >> 2) & 0x03030303u) << 4);
    const uint32_t s2 = ((w[0] >> 4) & 0x0f0f0f0fu) | (((top >> 4) & 0x03030303u) << 4);
    const uint32_t s3 = ((w[1] >> 4) & 0x0f0f0f0fu) | (((top >> 6) & 0x03030303u) << 4);
    *lo = s0 | static_cast<uint64_t>(s1) << 32;
    *hi = s2 | static_cast<uint64_t>(s3) << 32;
}

// The 16 signed scales (sc - 32) of a Q3_K block, in sub-block order.
static inline void q3_k_signed_scales(const uint8_t* scales, int* out) {
    uint64_t half[2];
    q3_k_scales(scales, &half[0], &half[1]);
    for (int i = 0; i < 16; ++i) out[i] = static_cast<int>((half[i / 8] >> (8 * (i % 8))) & 0xff) - 32;
}

// Element l (0..31) of a block's 16 bytes of nibbles (the Q4_0 order).
static inline int nibble(const uint8_t* qs, int l) { return l < 16 ? qs[l] & 0x0f : qs[l - 16] >> 4; }

// The 5-bit value (0..31) of element l of a Q5_0 / Q5_1 block.
static inline int q5_value(const uint8_t* qh, const uint8_t* qs, int l) {
    uint32_t high;
    std::memcpy(&high, qh, sizeof high);
    return nibble(qs, l) | static_cast<int>(((high >> l) & 1) << 4);
}

// The 2-bit value of element e (0..255) of a Q2_K block.
static inline int q2_k_value(const BlockQ2_K& b, int e) {
    return (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// The 3-bit value (0..7, w = d * scale * (value - 4)) of element e of a
// Q3_K block.
static inline int q3_k_value(const BlockQ3_K& b, int e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low2 = (b.qs[32 * h + l] >> (2 * k)) & 3;
    return low2 | (((b.hmask[l] >> (4 * h + k)) & 1) << 2);
}

// The 6-bit value (0..63, w = d * scale * (value - 32)) of element e of a
// Q6_K block.
static inline int q6_k_value(const BlockQ6_K& b, int e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t lo = b.ql[64 * h + 32 * (k & 1) + l];
    const int low4 = k < 2 ? (lo & 0x0f) : (lo >> 4);
    return low4 | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

// The signed scale (sc - 32) of sub-block j (0..7) of an IQ4_XS block:
// low 4 bits from a nibble of scales_l, top 2 from scales_h.
static inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
    const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
    const int high = (b.scales_h >> (2 * j)) & 3;
    return (low | (high << 4)) - 32;
}

}  // namespace vllm::kernels
