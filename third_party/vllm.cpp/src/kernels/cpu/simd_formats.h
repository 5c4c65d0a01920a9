// How each weight type's rows are read, written once against the vector
// layer V (simd_avx2.h, simd_avx512.h) and driven by the tile loops of
// simd_gemm.h. A step of a tile covers 64 elements of a quantized weight
// row and its activations (16 of a float row).
//
// "Flat" formats (F32, F16, BF16, Q4_0, Q4_1, Q8_0) accumulate each step
// straight into float accumulators:
//   XRow x_row(row, cols); int64_t steps(cols); kStepBytes (of a row);
//   W load_w(row, step, cols); X load_x(xrow, step); madd(acc, W, X);
//   float tail(row, xrow, cols): elements past the last full step.
// Super-block formats (Q4_K, Q5_K, Q6_K) sum four steps in int32 with the
// sub-block scales, and go to float once per 256 elements:
//   row(row, sb, Row&); template <int S> I weights(Row) (step S of 4);
//   Row::scales: the int16 sub-block scales, kScalesPerStep of them per step;
//   Row::corr: 16 int16 factors for the activations' 16-element sums,
//   either mins to scale by Row::dmin (kMins) or integer offsets.
// kMins: the format has a min term, sum over 32-element blocks b of
// m_b * s_b (s: the activations' d * sum(q)), which tiles over panels add
// for 16 blocks at once at the end instead of step by step.
// Include only from *_avx2.cpp / *_avx512.cpp (internal linkage).
#pragma once
#include <cstdint>

#include "kernels/cpu/act_layout.h"
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

// Shared by Q4_0, Q4_1 and Q8_0: a step is blocks 2s and 2s + 1. With an
// odd block count the last step pairs the last block with itself; the
// activations' pad block has d = s = 0, so the second copy adds nothing.
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

template <class V>
struct Q4_0Format : PairedBlocks<V, BlockQ4_0> {
    using Base = PairedBlocks<V, BlockQ4_0>;
    using I = typename V::I;
    using F = typename V::F;
    struct W {
        I q;  // 0..15
        F d;
    };
    struct X {
        I q;
        I bias;  // -8 * sum(x) spread over the lanes: turns q into q - 8
        F d;
    };
    static W load_w(const uint8_t* row, int64_t step, int64_t cols) {
        const BlockQ4_0* a = Base::first(row, step);
        const BlockQ4_0* b = Base::second(row, step, cols);
        return {V::nibbles_2x16(a->qs, b->qs), V::f16_pair(&a->d, &b->d)};
    }
    static X load_x(const Q8x32Row& x, int64_t step) {
        const I q = V::load(x.qs + 64 * step);
        return {q, V::sub32(V::zero(), V::dot_u8(V::zero(), V::set1_8(8), q)), V::bcast2(x.d + 2 * step)};
    }
    static void madd(typename V::Acc& acc, const W& w, const X& x) {
        acc = V::fma(V::cvt(V::dot_u8(x.bias, w.q, x.q)), V::mul(w.d, x.d), acc);
    }
};

// w = d q + m: sum_b (d dx isum + m s)_b. madd() adds the min term step by
// step; tiles over panels use madd_without_min() and add it at the end, an
// FMA per step and tile pair less.
template <class V>
struct Q4_1Format : PairedBlocks<V, BlockQ4_1> {
    using Base = PairedBlocks<V, BlockQ4_1>;
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
        const BlockQ4_1* a = Base::first(row, step);
        const BlockQ4_1* b = Base::second(row, step, cols);
        return {V::nibbles_2x16(a->qs, b->qs), V::f16_pair(&a->d, &b->d), V::f16_pair(&a->m, &b->m)};
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
struct Q8_0Format : PairedBlocks<V, BlockQ8_0> {
    using Base = PairedBlocks<V, BlockQ8_0>;
    using F = typename V::F;
    struct W {
        typename V::S8W q;
        F d;
    };
    struct X {
        typename V::S8X q;
        F d;
    };
    static W load_w(const uint8_t* row, int64_t step, int64_t cols) {
        const BlockQ8_0* a = Base::first(row, step);
        const BlockQ8_0* b = Base::second(row, step, cols);
        return {V::s8_weights(V::load_2x32(a->qs, b->qs)), V::f16_pair(&a->d, &b->d)};
    }
    static X load_x(const Q8x32Row& x, int64_t step) {
        return {V::s8_acts(V::load(x.qs + 64 * step)), V::bcast2(x.d + 2 * step)};
    }
    static void madd(typename V::Acc& acc, const W& w, const X& x) {
        acc = V::fma(V::cvt(V::dot_s8(w.q, x.q)), V::mul(w.d, x.d), acc);
    }
};

// --- K-quants ---------------------------------------------------------------------

// A super-block's scales, kept in registers: building them in memory with
// scalar stores and reloading them as vectors stalls on store forwarding.
template <class V, class Block>
struct KRow {
    const Block* b;
    typename V::F d;       // super-block scale, all lanes
    typename V::F dmin;    // -dmin, all lanes (kMins formats)
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

// The min term's factors of a Q4_K / Q5_K super-block: -dmin * m_j.
template <class Block>
void k4_k5_mins(const Block* b, float* out) {
    const float dmin = fp16_to_fp32(b->dmin);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(b->scales, j, &sc, &m);
        out[j] = -dmin * static_cast<float>(m);
    }
}

template <class V>
struct Q4_KFormat {
    static constexpr bool kSuperBlock = true;
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
