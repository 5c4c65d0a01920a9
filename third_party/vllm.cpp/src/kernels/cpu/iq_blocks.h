// The block layouts of the codebook formats (IQ1_S, IQ1_M, IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S), the ternary ones (TQ1_0, TQ2_0) and
// MXFP4, as GGUF stores them, and one decoder ("codec") per 256-element
// format that every kernel shares: the dequantizer, the scalar dot
// products and the SIMD formats all read a block through it, so the bit
// layouts live in one place.
//
// A codec presents a super-block as w_e = d(b) * scale16(b, e / 16) * q_e:
// integer weights q (|q| <= kOffset, or -kOffset <= q for the ternary
// ones) in groups of 8 (group8_u: q + kOffset as bytes), a small positive
// integer scale per 16 elements, and one float. The formats' own half steps (IQ2's
// (0.5 + s) / 4, IQ1's delta of 1/8) become odd integer scales and a power
// of two folded into d, so the integer sums are exact.
//
// `static inline` as in quant_blocks.h: included by files built with
// different ISA flags.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/cpu/iq_grids.h"
#include "kernels/cpu/quant_blocks.h"

namespace vllm::kernels {

// Per 32 elements: 4 grid indices (bytes 0..3 of the first uint32), 4 x 7
// sign bits and a 4-bit scale (the second uint32's bits 28..31).
struct BlockIQ2_XXS {
    uint16_t d;  // fp16
    uint16_t qs[kQKK / 8];
};

// Per 8 elements a uint16: a 9-bit grid index and 7 sign bits; a 4-bit
// scale per 16 elements.
struct BlockIQ2_XS {
    uint16_t d;  // fp16
    uint16_t qs[kQKK / 8];
    uint8_t scales[kQKK / 32];
};

// Per 8 elements a 10-bit grid index (low byte in qs[g], top bits in qh)
// and 8 sign bits (qs[32 + g]); a 4-bit scale per 16 elements.
struct BlockIQ2_S {
    uint16_t d;  // fp16
    uint8_t qs[kQKK / 4];
    uint8_t qh[kQKK / 32];
    uint8_t scales[kQKK / 32];
};

// Per 32 elements: 8 indices into the 4-value grid (qs[0..63]), then per
// 32 a uint32 of 4 x 7 sign bits and a 4-bit scale (qs[64..95]).
struct BlockIQ3_XXS {
    uint16_t d;  // fp16
    uint8_t qs[3 * kQKK / 8];
};

// Per 4 elements a 9-bit grid index (qs plus a bit of qh), per 8 a sign
// byte, per 32 a 4-bit scale.
struct BlockIQ3_S {
    uint16_t d;  // fp16
    uint8_t qs[kQKK / 4];
    uint8_t qh[kQKK / 32];
    uint8_t signs[kQKK / 8];
    uint8_t scales[kQKK / 64];
};

// Per 8 elements an 11-bit index into the {-1, 0, 1} grid (qs plus 3 bits
// of qh); per 32 in qh's top bits a 3-bit scale and the sign of delta.
struct BlockIQ1_S {
    uint16_t d;  // fp16
    uint8_t qs[kQKK / 8];
    uint16_t qh[kQKK / 32];
};

// As IQ1_S with a delta sign per 8 elements, a 3-bit scale per 16, and
// the fp16 d spread over the top nibbles of the four uint16 of scales.
struct BlockIQ1_M {
    uint8_t qs[kQKK / 8];
    uint8_t qh[kQKK / 16];
    uint8_t scales[kQKK / 32];
};

// Ternary: 5 base-3 digits a byte in qs, 4 in qh; w = d * (digit - 1).
struct BlockTQ1_0 {
    uint8_t qs[48];
    uint8_t qh[4];
    uint16_t d;  // fp16
};

// Ternary in 2 bits (the Q2_K element order); w = d * (q - 1).
struct BlockTQ2_0 {
    uint8_t qs[kQKK / 4];
    uint16_t d;  // fp16
};

// 32 elements: w = 2^(e - 128) * kMxfp4Values[nibble], nibbles in the
// Q4_0 order.
struct BlockMXFP4 {
    uint8_t e;  // E8M0 exponent
    uint8_t qs[kQK / 2];
};

static_assert(sizeof(BlockIQ2_XXS) == 66, "IQ2_XXS layout");
static_assert(sizeof(BlockIQ2_XS) == 74, "IQ2_XS layout");
static_assert(sizeof(BlockIQ2_S) == 82, "IQ2_S layout");
static_assert(sizeof(BlockIQ3_XXS) == 98, "IQ3_XXS layout");
static_assert(sizeof(BlockIQ3_S) == 110, "IQ3_S layout");
static_assert(sizeof(BlockIQ1_S) == 50, "IQ1_S layout");
static_assert(sizeof(BlockIQ1_M) == 56, "IQ1_M layout");
static_assert(sizeof(BlockTQ1_0) == 54, "TQ1_0 layout");
static_assert(sizeof(BlockTQ2_0) == 66, "TQ2_0 layout");
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 layout");

// MXFP4's scale: 2^(e - 127) halved, as the doubled value table needs
// (e = 0 and 1 give the float subnormals 2^-128 and 2^-127).
static inline float e8m0_half_to_fp32(uint8_t e) {
    return bits_to_float(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

static inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Byte value v in all eight lanes.
static constexpr uint64_t bytes_of(uint64_t v) { return v * 0x0101010101010101ull; }

// kSignBytes[s]: byte j is 0xff where bit j of s is set.
struct SignBytes {
    uint64_t mask[256];
    constexpr SignBytes() : mask() {
        for (int s = 0; s < 256; ++s)
            for (int j = 0; j < 8; ++j)
                if ((s >> j) & 1) mask[s] |= 0xffull << (8 * j);
    }
};
inline constexpr SignBytes kSignBytes{};

// offset + (sign ? -m : m) for the eight magnitudes m of `grid` (each at
// most offset, so no lane borrows or carries), as eight bytes.
static inline uint64_t signed_grid8(uint64_t grid, uint8_t signs, int offset) {
    const uint64_t o = bytes_of(static_cast<uint64_t>(offset));
    const uint64_t negative = kSignBytes.mask[signs];
    return ((o + grid) & ~negative) | ((o - grid) & negative);
}

// The scale nibble of 16-element group k, stored one byte per 32.
static inline int nibble_scale(const uint8_t* scales, int k) { return (scales[k / 2] >> (4 * (k % 2))) & 0x0f; }

// Each codec gives group8_u(b, g): the eight weights of group g offset by
// kOffset (u = q + kOffset, 0..2 kOffset) as the bytes of a uint64; the
// signed q follow from it (codec_group8).

struct IQ2_XXSCodec {
    using Block = BlockIQ2_XXS;
    static constexpr int kOffset = 43;  // the grid's largest magnitude
    static float d(const Block& b) { return fp16_to_fp32(b.d) * 0.125f; }
    static int scale16(const Block& b, int k) { return 2 * static_cast<int>(load_u32(b.qs + 4 * (k / 2) + 2) >> 28) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const uint32_t indices = load_u32(b.qs + 4 * (g / 4));
        const uint32_t signs = load_u32(b.qs + 4 * (g / 4) + 2);
        const int l = g % 4;
        return signed_grid8(kIq2xxsGrid[(indices >> (8 * l)) & 0xff], kIqSigns7[(signs >> (7 * l)) & 127], kOffset);
    }
};

struct IQ2_XSCodec {
    using Block = BlockIQ2_XS;
    static constexpr int kOffset = 43;
    static float d(const Block& b) { return fp16_to_fp32(b.d) * 0.125f; }
    static int scale16(const Block& b, int k) { return 2 * nibble_scale(b.scales, k) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        return signed_grid8(kIq2xsGrid[b.qs[g] & 511], kIqSigns7[b.qs[g] >> 9], kOffset);
    }
};

struct IQ2_SCodec {
    using Block = BlockIQ2_S;
    static constexpr int kOffset = 43;
    static float d(const Block& b) { return fp16_to_fp32(b.d) * 0.125f; }
    static int scale16(const Block& b, int k) { return 2 * nibble_scale(b.scales, k) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const int high = (b.qh[g / 4] >> (2 * (g % 4))) & 3;
        return signed_grid8(kIq2sGrid[b.qs[g] | (high << 8)], b.qs[kQKK / 8 + g], kOffset);
    }
};

// Two 4-element grid entries make a group of 8.
static inline uint64_t grid4_pair(const uint32_t* grid, int first, int second) {
    return grid[first] | static_cast<uint64_t>(grid[second]) << 32;
}

struct IQ3_XXSCodec {
    using Block = BlockIQ3_XXS;
    static constexpr int kOffset = 62;
    static float d(const Block& b) { return fp16_to_fp32(b.d) * 0.25f; }
    static int scale16(const Block& b, int k) {
        return 2 * static_cast<int>(load_u32(b.qs + kQKK / 4 + 4 * (k / 2)) >> 28) + 1;
    }
    static uint64_t group8_u(const Block& b, int g) {
        const uint32_t signs = load_u32(b.qs + kQKK / 4 + 4 * (g / 4));
        return signed_grid8(grid4_pair(kIq3xxsGrid, b.qs[2 * g], b.qs[2 * g + 1]),
                            kIqSigns7[(signs >> (7 * (g % 4))) & 127], kOffset);
    }
};

struct IQ3_SCodec {
    using Block = BlockIQ3_S;
    static constexpr int kOffset = 15;
    static float d(const Block& b) { return fp16_to_fp32(b.d); }
    static int scale16(const Block& b, int k) { return 2 * nibble_scale(b.scales, k / 2) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const int high = b.qh[g / 4] >> (2 * (g % 4));  // bit 0: the first index's ninth bit, bit 1: the second's
        return signed_grid8(grid4_pair(kIq3sGrid, b.qs[2 * g] | ((high & 1) << 8), b.qs[2 * g + 1] | ((high & 2) << 7)),
                            b.signs[g], kOffset);
    }
};

// IQ1: q = 8 * grid + (delta > 0 ? 1 : -1) with grid bytes -1, 0, 1 and d
// carrying the 1/8, so u = q + 9 = 8 * (grid + 1) + (0 or 2). grid + 1 per
// byte without carries: the low seven bits added, the top bit xored back.
static inline uint64_t iq1_group8_u(uint64_t grid, bool negative_delta) {
    const uint64_t low7 = bytes_of(0x7f), ones = bytes_of(1);
    const uint64_t plus1 = ((grid & low7) + ones) ^ (grid & ~low7);
    return (plus1 << 3) + (negative_delta ? 0 : bytes_of(2));
}

struct IQ1_SCodec {
    using Block = BlockIQ1_S;
    static constexpr int kOffset = 9;
    static float d(const Block& b) { return fp16_to_fp32(b.d) * 0.125f; }
    static int scale16(const Block& b, int k) { return 2 * ((b.qh[k / 2] >> 12) & 7) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const uint16_t h = b.qh[g / 4];
        return iq1_group8_u(kIq1sGrid[b.qs[g] | (((h >> (3 * (g % 4))) & 7) << 8)], (h & 0x8000) != 0);
    }
};

struct IQ1_MCodec {
    using Block = BlockIQ1_M;
    static constexpr int kOffset = 9;
    static uint16_t scale_word(const Block& b, int i) {
        uint16_t w;
        std::memcpy(&w, b.scales + 2 * i, sizeof w);
        return w;
    }
    static float d(const Block& b) {
        const auto half = static_cast<uint16_t>((scale_word(b, 0) >> 12) | ((scale_word(b, 1) >> 8) & 0x00f0) |
                                                ((scale_word(b, 2) >> 4) & 0x0f00) | (scale_word(b, 3) & 0xf000));
        return fp16_to_fp32(half) * 0.125f;
    }
    static int scale16(const Block& b, int k) { return 2 * ((scale_word(b, k / 4) >> (3 * (k % 4))) & 7) + 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const int h = b.qh[g / 2];  // groups 2i and 2i + 1 share qh[i]: low and high nibble
        const int nib = g % 2 ? h >> 4 : h & 0x0f;
        return iq1_group8_u(kIq1sGrid[b.qs[g] | ((nib & 7) << 8)], (nib & 8) != 0);
    }
};

struct TQ1_0Codec {
    using Block = BlockTQ1_0;
    static constexpr int kOffset = 1;
    static float d(const Block& b) { return fp16_to_fp32(b.d); }
    static int scale16(const Block&, int) { return 1; }
    // Digit n (0..4) of a byte is the top base-3 digit of byte * 3^n mod
    // 256, read as (x * 3) >> 8.
    static uint64_t digit(uint8_t byte, int n) {
        static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
        const auto shifted = static_cast<uint8_t>(byte * kPow3[n]);
        return static_cast<uint64_t>((shifted * 3) >> 8);
    }
    // u (the digit) of element e. Elements 0..159: digit e / 32 of
    // qs[e % 32]; 160..239: digit (e - 160) / 16 of qs[32 + e % 16];
    // 240..255: digit (e - 240) / 4 of qh[e % 4].
    static uint64_t value_u(const Block& b, int e) {
        if (e < 160) return digit(b.qs[e % 32], e / 32);
        if (e < 240) return digit(b.qs[32 + e % 16], (e - 160) / 16);
        return digit(b.qh[e % 4], (e - 240) / 4);
    }
    static uint64_t group8_u(const Block& b, int g) {
        uint64_t u = 0;
        for (int j = 0; j < 8; ++j) u |= value_u(b, 8 * g + j) << (8 * j);
        return u;
    }
};

struct TQ2_0Codec {
    using Block = BlockTQ2_0;
    static constexpr int kOffset = 1;  // u is the stored 2-bit value
    static float d(const Block& b) { return fp16_to_fp32(b.d); }
    static int scale16(const Block&, int) { return 1; }
    static uint64_t group8_u(const Block& b, int g) {
        const int e = 8 * g;  // element 128h + 32k + l is bits 2k of qs[32h + l]
        uint64_t bytes;
        std::memcpy(&bytes, b.qs + 32 * (e / 128) + e % 32, sizeof bytes);
        return (bytes >> (2 * ((e % 128) / 32))) & bytes_of(3);
    }
};

// The signed weights q of group g.
template <class Codec>
static inline void codec_group8(const typename Codec::Block& b, int g, int8_t* q) {
    const uint64_t u = Codec::group8_u(b, g);
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(static_cast<int>((u >> (8 * j)) & 0xff) - Codec::kOffset);
}

}  // namespace vllm::kernels
