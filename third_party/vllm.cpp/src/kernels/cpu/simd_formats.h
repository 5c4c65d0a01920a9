// How each weight type's rows are read, written once against the vector
// layer V (simd_avx2.h, simd_avx512.h) and driven by the tile loops of
// simd_gemm.h. A step of a tile covers 64 elements of a quantized weight
// row and its activations (16 of a float row).
//
// "Flat" formats (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
// IQ4_XS) accumulate each step straight into float accumulators:
//   XRow x_row(row, cols); int64_t steps(cols); kStepBytes (of a row);
//   W load_w(row, step, cols); X load_x(xrow, step); madd(acc, W, X);
//   float tail(row, xrow, cols): elements past the last full step.
// Super-block formats (Q2_K .. Q6_K) sum four steps in int32 with the
// sub-block scales, and go to float once per 256 elements:
//   row(row, sb, Row&); template <int S> I weights(Row) (step S of 4);
//   Row::scales: the int16 sub-block scales, kScalesPerStep of them per step;
//   Row::corr: 16 int16 factors for the activations' 16-element sums,
//   either mins to scale by Row::dmin (kMins) or integer offsets.
// kMins: the format has a min term, sum over 32-element blocks b of
// m_b * s_b (s: the activations' d * sum(q)), which tiles over panels add
// for 16 blocks at once at the end instead of step by step.
// kGroupMins (super-block formats): a min term per 16-element group
// (Q2_K), corr times the activations' group sums scaled by Row::dmin,
// which every tile adds per super-block, panel or not.
// Include only from *_avx2.cpp / *_avx512.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/iq_blocks.h"
#include "kernels/cpu/quant_blocks.h"

namespace vllm::kernels {
namespace {

// --- float weights ------------------------------------------------------------

template <class V, GgmlType kType>
struct FloatFormat {
    static constexpr bool kSuperBlock = false;
    static constexpr bool kMins = false;
    using F = typename V::F;
    using XRow = const float*;
    using W = F;
    using X = F;
    static constexpr int kStep = V::kFloats;
    static constexpr int64_t kStepBytes = kStep * (kType == GgmlType::F32 ? 4 : 2);

    static XRow x_row(const uint8_t* p, int64_t /*cols*/) { return reinterpret_cast<const float*>(p); }
    static int64_t steps(int64_t cols) { return cols / kStep; }
    static float element(const uint8_t* row, int64_t i) {
        if constexpr (kType == GgmlType::F32) return reinterpret_cast<const float*>(row)[i];
        else if constexpr (kType == GgmlType::F16) return fp16_to_fp32(reinterpret_cast<const uint16_t*>(row)[i]);
        else return bf16_to_fp32(reinterpret_cast<const uint16_t*>(row)[i]);
    }
    static W load_w(const uint8_t* row, int64_t step, int64_t /*cols*/) {
        if constexpr (kType == GgmlType::F32) return V::load_f32(reinterpret_cast<const float*>(row) + step * kStep);
        else if constexpr (kType == GgmlType::F16) return V::load_f16(reinterpret_cast<const uint16_t*>(row) + step * kStep);
        else return V::load_bf16(reinterpret_cast<const uint16_t*>(row) + step * kStep);
    }
    static X load_x(XRow x, int64_t step) { return V::load_f32(x + step * kStep); }
    static void madd(typename V::Acc& acc, const W& w, const X& x) { acc = V::fma(w, x, acc); }
    static float tail(const uint8_t* row, XRow x, int64_t cols) {
        float sum = 0.0f;
        for (int64_t i = steps(cols) * kStep; i < cols; ++i) sum += element(row, i) * x[i];
        return sum;
    }
};

// --- 32-element blocks, taken in pairs -----------------------------------------

// Shared by the 32-element formats (and IQ4_XS, read as such): a step is
// blocks 2s and 2s + 1. With an odd block count the last step pairs the
// last block with itself; the activations' pad block has d = s = 0, so the
// second copy adds nothing.
template <class V, class Block>
struct PairedBlocks {
    static constexpr bool kSuperBlock = false;
    static constexpr bool kMins = false;
    using XRow = Q8x32Row;
    static constexpr int64_t kStepBytes = 2 * sizeof(Block);
    static XRow x_row(const uint8_t* p, int64_t cols) { return q8x32_row(p, cols); }
    static int64_t steps(int64_t cols) { return q8x32_blocks_padded(cols) / 2; }
    static const Block* first(const uint8_t* row, int64_t step) {
        return reinterpret_cast<const Block*>(row) + 2 * step;
    }
    static const Block* second(const uint8_t* row, int64_t step, int64_t cols) {
        const int64_t last = cols / kQK - 1;
        return reinterpret_cast<const Block*>(row) + (2 * step + 1 <= last ? 2 * step + 1 : last);
    }
    static float tail(const uint8_t*, XRow, int64_t) { return 0.0f; }
};

// The unsigned quants (below 128) of a step's two blocks, in element
// order: Q4_0 / Q4_1 nibbles, plus 16 times the fifth bits for Q5_0 / Q5_1.
template <class V, class Block>
typename V::I unsigned_quants(const Block* a, const Block* b) {
    const typename V::I nibbles = V::nibbles_2x16(a->qs, b->qs);
    if constexpr (std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>) {
        uint32_t ha, hb;
        std::memcpy(&ha, a->qh, sizeof ha);
        std::memcpy(&hb, b->qh, sizeof hb);
        return V::or_(nibbles, V::and_(V::bit_mask_bytes(ha | static_cast<uint64_t>(hb) << 32), V::set1_8(0x10)));
    } else {
        return nibbles;
    }
}

// Q4_0 (kOffset 8) and Q5_0 (16): w = d (q - kOffset).
template <class V, class Block, int kOffset>
struct OffsetFormat : PairedBlocks<V, Block> {
    using Base = PairedBlocks<V, Block>;
    using I = typename V::I;
    using F = typename V::F;
    struct W {
        I q;  // 0 .. 2 kOffset - 1
        F d;
    };
    struct X {
        I q;
        I bias;  // -kOffset * sum(x) spread over the lanes: turns q into q - kOffset
        F d;
    };
    static W load_w(const uint8_t* row, int64_t step, int64_t cols) {
        const Block* a = Base::first(row, step);
        const Block* b = Base::second(row, step, cols);
        return {unsigned_quants<V>(a, b), V::f16_pair(&a->d, &b->d)};
    }
    static X load_x(const Q8x32Row& x, int64_t step) {
        const I q = V::load(x.qs + 64 * step);
        return {q, V::sub32(V::zero(), V::dot_u8(V::zero(), V::set1_8(kOffset), q)), V::bcast2(x.d + 2 * step)};
    }
    static void madd(typename V::Acc& acc, const W& w, const X& x) {
        acc = V::fma(V::cvt(V::dot_u8(x.bias, w.q, x.q)), V::mul(w.d, x.d), acc);
    }
};

template <class V>
using Q4_0Format = OffsetFormat<V, BlockQ4_0, 8>;
template <class V>
using Q5_0Format = OffsetFormat<V, BlockQ5_0, 16>;

// Q4_1 and Q5_1, w = d q + m: sum_b (d dx isum + m s)_b. madd() adds the
// min term step by step; tiles over panels use madd_without_min() and add
// it at the end, an FMA per step and tile pair less.
template <class V, class Block>
struct MinFormat : PairedBlocks<V, Block> {
    using Base = PairedBlocks<V, Block>;
    using I = typename V::I;
    using F = typename V::F;
    static constexpr bool kMins = true;
    struct W {
        I q;
        F d, m;
    };
    struct X {
        I q;
        F d;
        F s;  // s / 8: the min term lands once in each of a block's 8 lanes
    };
    static W load_w(const uint8_t* row, int64_t step, int64_t cols) {
        const Block* a = Base::first(row, step);
        const Block* b = Base::second(row, step, cols);
        return {unsigned_quants<V>(a, b), V::f16_pair(&a->d, &b->d), V::f16_pair(&a->m, &b->m)};
    }
    static X load_x(const Q8x32Row& x, int64_t step) {
        return {V::load(x.qs + 64 * step), V::bcast2(x.d + 2 * step),
                V::mul(V::bcast2(x.s + 2 * step), V::set1(0.125f))};
    }
    static void madd_without_min(typename V::Acc& acc, const W& w, const X& x) {
        acc = V::fma(V::cvt(V::dot_u8(V::zero(), w.q, x.q)), V::mul(w.d, x.d), acc);
    }
    static void madd(typename V::Acc& acc, const W& w, const X& x) {
        madd_without_min(acc, w, x);
        acc = V::fma(w.m, x.s, acc);
    }
};

template <class V>
using Q4_1Format = MinFormat<V, BlockQ4_1>;
template <class V>
using Q5_1Format = MinFormat<V, BlockQ5_1>;

// Signed weights times the signed activations, one scale per block: Q8_0,
// IQ4_NL, IQ4_XS, MXFP4.
template <class V>
struct SignedDot {
    using F = typename V::F;
    struct W {
        typename V::S8W q;
        F d;
    };
    struct X {
        typename V::S8X q;
        F d;
    };
    static X load_x(const Q8x32Row& x, int64_t step) {
        return {V::s8_acts(V::load(x.qs + 64 * step)), V::bcast2(x.d + 2 * step)};
    }
    static void madd(typename V::Acc& acc, const W& w, const X& x) {
        acc = V::fma(V::cvt(V::dot_s8(w.q, x.q)), V::mul(w.d, x.d), acc);
    }
};

// The signed quants of a step's two blocks: Q8_0's bytes, or the values
// IQ4_NL's and MXFP4's nibbles pick from their tables.
template <class V, class Block>
typename V::I signed_quants(const Block* a, const Block* b) {
    if constexpr (std::is_same_v<Block, BlockQ8_0>) return V::load_2x32(a->qs, b->qs);
    else if constexpr (std::is_same_v<Block, BlockMXFP4>) return V::lookup16(kMxfp4Values, V::nibbles_2x16(a->qs, b->qs));
    else return V::lookup16(kIq4Values, V::nibbles_2x16(a->qs, b->qs));
}

// The two blocks' scales: their fp16 d, or MXFP4's E8M0 exponents.
template <class V, class Block>
typename V::F block_scales(const Block* a, const Block* b) {
    if constexpr (std::is_same_v<Block, BlockMXFP4>) {
        const float scales[2] = {e8m0_half_to_fp32(a->e), e8m0_half_to_fp32(b->e)};
        return V::bcast2(scales);
    } else {
        return V::f16_pair(&a->d, &b->d);
    }
}

template <class V, class Block>
struct SignedFormat : PairedBlocks<V, Block>, SignedDot<V> {
    using Base = PairedBlocks<V, Block>;
    using W = typename SignedDot<V>::W;
    static W load_w(const uint8_t* row, int64_t step, int64_t cols) {
        const Block* a = Base::first(row, step);
        const Block* b = Base::second(row, step, cols);
        return {V::s8_weights(signed_quants<V>(a, b)), block_scales<V>(a, b)};
    }
};

template <class V>
using Q8_0Format = SignedFormat<V, BlockQ8_0>;
template <class V>
using IQ4_NLFormat = SignedFormat<V, BlockIQ4_NL>;
template <class V>
using MXFP4Format = SignedFormat<V, BlockMXFP4>;

// IQ4_XS read as 32-element blocks (the Q8x32 activations): a step is
// sub-blocks 2j and 2j + 1 of super-block step / 4, each an IQ4_NL block
// whose scale is d * (sc - 32). Rows are whole super-blocks, so steps come
// out as for the paired formats and never pair a block with itself.
template <class V>
struct IQ4_XSFormat : PairedBlocks<V, BlockIQ4_XS>, SignedDot<V> {
    using W = typename SignedDot<V>::W;
    static constexpr int64_t kStepBytes = sizeof(BlockIQ4_XS) / 4;  // for prefetching: a step's share
    static W load_w(const uint8_t* row, int64_t step, int64_t /*cols*/) {
        const BlockIQ4_XS* b = reinterpret_cast<const BlockIQ4_XS*>(row) + step / 4;
        const int j = 2 * static_cast<int>(step % 4);
        const float d = fp16_to_fp32(b->d);
        const float scales[2] = {d * static_cast<float>(iq4_xs_scale(*b, j)),
                                 d * static_cast<float>(iq4_xs_scale(*b, j + 1))};
        const typename V::I q = V::lookup16(kIq4Values, V::nibbles_2x16(b->qs + 16 * j, b->qs + 16 * (j + 1)));
        return {V::s8_weights(q), V::bcast2(scales)};
    }
};

// --- K-quants ---------------------------------------------------------------------

// A super-block's scales, kept in registers: building them in memory with
// scalar stores and reloading them as vectors stalls on store forwarding.
template <class V, class Block>
struct KRow {
    const Block* b;
    typename V::F d;       // super-block scale, all lanes
    typename V::F dmin;    // -dmin, all lanes (formats with mins)
    typename V::I scales;  // sub-block scales as int16 in lanes 0..15
    typename V::I corr;    // per 16-element activation sum, int16 in lanes 0..15
};

// Q4_K and Q5_K share the 6-bit scales and mins (k_scale_min), unpacked
// here four at a time in 32-bit words.
// (Inlined by force, and filling the caller's KRow: as a call returning
// it, the scales went through memory, and a GEMV waited on each row's.)
template <class V, class Block>
[[gnu::always_inline]] inline void k4_k5_row(const uint8_t* row, int64_t sb, KRow<V, Block>& r) {
    r.b = reinterpret_cast<const Block*>(row) + sb;
    r.d = V::set1(fp16_to_fp32(r.b->d));
    r.dmin = V::set1(-fp16_to_fp32(r.b->dmin));
    uint32_t w[3];
    std::memcpy(w, r.b->scales, sizeof w);
    const uint32_t sc_lo = w[0] & 0x3f3f3f3fu;
    const uint32_t m_lo = w[1] & 0x3f3f3f3fu;
    const uint32_t sc_hi = (w[2] & 0x0f0f0f0fu) | (((w[0] >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4);
    const typename V::I both = V::u8x16_to_i16(sc_lo | static_cast<uint64_t>(sc_hi) << 32,
                                               m_lo | static_cast<uint64_t>(m_hi) << 32);  // sc0..7, m0..7
    r.scales = both;
    r.corr = V::template pairs16<8>(both);  // m_j for activation sums 2j and 2j + 1
}

// The min term's factors of a Q4_K / Q5_K super-block: -dmin * m_j (the
// mins unpacked four at a time as k4_k5_row does; inlined by force: the
// Q4_K GEMV of batch-1 decode calls it once per row and super-block, and
// as a call it took a quarter of that GEMV's time).
template <class Block>
[[gnu::always_inline]] inline void k4_k5_mins(const Block* b, float* out) {
    const float neg_dmin = -fp16_to_fp32(b->dmin);
    uint32_t w[3];
    std::memcpy(w, b->scales, sizeof w);
    const uint32_t m_lo = w[1] & 0x3f3f3f3fu;
    const uint32_t m_hi = ((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4);
    for (int j = 0; j < 4; ++j) {
        out[j] = neg_dmin * static_cast<float>((m_lo >> (8 * j)) & 0xffu);
        out[4 + j] = neg_dmin * static_cast<float>((m_hi >> (8 * j)) & 0xffu);
    }
}

// The 2-bit quants of step S (elements 64S .. 64S + 63) of a Q2_K or Q3_K
// block: bit pairs 4(S % 2) and 4(S % 2) + 2 of the half's 32 qs bytes.
template <class V, int S, class Block>
typename V::I two_bit_quants(const Block* b) {
    return V::and_(V::template dup32_shift<-4 * (S % 2), -4 * (S % 2) - 2>(b->qs + 32 * (S / 2)), V::set1_8(3));
}

// w = d sc q - dmin m per 16-element group: sc and m are the nibbles of
// the group's scale byte.
template <class V>
struct Q2_KFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kMins = false;
    static constexpr bool kGroupMins = true;
    static constexpr int kScalesPerStep = 4;
    using Block = BlockQ2_K;
    using Row = KRow<V, Block>;
    [[gnu::always_inline]] static void row(const uint8_t* p, int64_t sb, Row& r) {
        r.b = reinterpret_cast<const BlockQ2_K*>(p) + sb;
        r.d = V::set1(fp16_to_fp32(r.b->d));
        r.dmin = V::set1(-fp16_to_fp32(r.b->dmin));
        uint64_t half[2];
        std::memcpy(half, r.b->scales, sizeof half);
        const uint64_t low = 0x0f0f0f0f0f0f0f0full;
        r.scales = V::u8x16_to_i16(half[0] & low, half[1] & low);
        r.corr = V::u8x16_to_i16((half[0] >> 4) & low, (half[1] >> 4) & low);
    }
    template <int S>
    static typename V::I weights(const Row& r) {
        return two_bit_quants<V, S>(r.b);
    }
};

// w = d (sc - 32) (q - 4): as Q6_K, the offset is corr = -4 * scale on
// the activations' group sums. The third bit of step S's two halves is
// bit 4(S / 2) + 2(S % 2) (and the next) of hmask, moved to bit 2.
template <class V>
struct Q3_KFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kMins = false;
    static constexpr bool kGroupMins = false;
    static constexpr int kScalesPerStep = 4;
    using Block = BlockQ3_K;
    using Row = KRow<V, Block>;
    [[gnu::always_inline]] static void row(const uint8_t* p, int64_t sb, Row& r) {
        r.b = reinterpret_cast<const BlockQ3_K*>(p) + sb;
        r.d = V::set1(fp16_to_fp32(r.b->d));
        r.dmin = V::set1(0.0f);
        uint64_t lo, hi;
        q3_k_scales(r.b->scales, &lo, &hi);
        r.scales = V::sub16(V::u8x16_to_i16(lo, hi), V::set1_16(32));
        r.corr = V::mullo16(r.scales, V::set1_16(-4));
    }
    template <int S>
    static typename V::I weights(const Row& r) {
        constexpr int bit = 4 * (S / 2) + 2 * (S % 2);
        const typename V::I high = V::and_(V::template dup32_shift<2 - bit, 1 - bit>(r.b->hmask), V::set1_8(4));
        return V::or_(two_bit_quants<V, S>(r.b), high);
    }
};

template <class V>
struct Q4_KFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kGroupMins = false;
    static constexpr bool kMins = true;
    static constexpr int kScalesPerStep = 2;
    using Block = BlockQ4_K;
    using Row = KRow<V, Block>;
    static void row(const uint8_t* p, int64_t sb, Row& r) { k4_k5_row<V, Block>(p, sb, r); }
    template <int S>
    static typename V::I weights(const Row& r) {
        return V::nibbles_32(r.b->qs + 32 * S);
    }
};

template <class V>
struct Q5_KFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kGroupMins = false;
    static constexpr bool kMins = true;
    static constexpr int kScalesPerStep = 2;
    using Block = BlockQ5_K;
    using Row = KRow<V, Block>;
    static void row(const uint8_t* p, int64_t sb, Row& r) { k4_k5_row<V, Block>(p, sb, r); }
    // Bits 2S and 2S + 1 of qh are the fifth bits of the step's two halves;
    // shifting them to bit 4 and masking gives 16 or 0.
    template <int S>
    static typename V::I weights(const Row& r) {
        const typename V::I high = V::and_(V::template dup32_shift<4 - 2 * S, 3 - 2 * S>(r.b->qh), V::set1_8(0x10));
        return V::or_(V::nibbles_32(r.b->qs + 32 * S), high);
    }
};

template <class V>
struct Q6_KFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kGroupMins = false;
    static constexpr bool kMins = false;
    static constexpr int kScalesPerStep = 4;
    using Block = BlockQ6_K;
    using Row = KRow<V, Block>;
    // q - 32 = q + corr: corr = -32 * the scale of each 16-element group,
    // applied to the activations' group sums in the integer domain.
    [[gnu::always_inline]] static void row(const uint8_t* p, int64_t sb, Row& r) {
        r.b = reinterpret_cast<const BlockQ6_K*>(p) + sb;
        r.d = V::set1(fp16_to_fp32(r.b->d));
        r.dmin = V::set1(0.0f);
        r.scales = V::i8x16_to_i16(r.b->scales);
        r.corr = V::mullo16(r.scales, V::set1_16(-32));
    }
    // Step S = half S / 2, part S % 2: the low (part 0) or high (part 1)
    // nibbles of that half's 64 ql bytes, plus the qh bit pairs 0/2 or 4/6
    // moved to bits 4..5.
    template <int S>
    static typename V::I weights(const Row& r) {
        constexpr int h = S / 2;
        const typename V::I ql = V::load(r.b->ql + 64 * h);
        const typename V::I mask30 = V::set1_8(0x30);
        if constexpr (S % 2 == 0)
            return V::or_(V::and_(ql, V::set1_8(0x0f)), V::and_(V::template dup32_shift<4, 2>(r.b->qh + 32 * h), mask30));
        else
            return V::or_(V::and_(V::template srl16<4>(ql), V::set1_8(0x0f)),
                          V::and_(V::template dup32_shift<0, -2>(r.b->qh + 32 * h), mask30));
    }
};

}  // namespace
}  // namespace vllm::kernels
