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

constexpr int kQK = 32;    // elements per block of Q4_0, Q4_1, Q8_0
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

// w = d * q
struct BlockQ8_0 {
    uint16_t d;  // fp16
    int8_t qs[kQK];
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

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 layout");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 layout");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 layout");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K layout");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K layout");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K layout");

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

}  // namespace vllm::kernels
