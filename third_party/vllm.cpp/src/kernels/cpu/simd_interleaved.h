// The matmuls over interleaved weights (interleave.h), written once against
// a vector layer V whose I holds 16 int32 lanes and F 16 floats: lane r of
// every vector belongs to row r of the 16-row group.
//
// Per block and token, 8 dot products (each of a weight vector with 4
// activation bytes broadcast to all lanes) fill one int32 sum per row,
// converted and scaled once: acc += sum * (d * dx) + offset * s, where s
// is the activations' dx * sum(q) and offset the format's per-row term
// (Q4_0: -8 d; Q5_0: -16 d; Q4_1 and Q5_1: their min m; Q8_0: -128 d,
// taking back the +128 that made its weights unsigned). The dot products
// collect in the layer's partial sums (AVX2: int16 pair sums of maddubs),
// widened to int32 every V::dot_terms(Fmt::kMaxWeight) vectors, before
// they could overflow (block_dots). A tile takes kT tokens, so each
// weight vector serves kT tokens. A token's arithmetic is the same
// whatever tile it lands in, so results do not depend on how many tokens
// share the batch.
//
// The K-quants (Q4_K, Q5_K, Q6_K) take the Q8x256 activations: per
// super-block and token, each sub-block's partial sums are multiplied by
// the rows' integer scales and summed in int32 (V::widen_scaled), and the
// mins (Q6_K: 32 times its scales, for its q - 32) by the activations'
// sub-block sums, two sub-blocks per int16 pair madd; float conversions
// per super-block then apply d dx (and Q4_K's and Q5_K's -dmin dx).
// Integer sums are exact, so this too is the same for a token alone or
// batched.
//
// The float formats (BF16, F16) take float activations: per pair of
// columns, the 16 rows' two weight vectors are widened to float in
// registers and each meets every token of the tile as one FMA with the
// token's activation broadcast (V::kFloatInterleavedTokens tokens a tile;
// where registers hold fewer tokens' sums for a whole group, wider tiles
// go over the group in slices of rows).
//
// Include only from the SIMD builds' kernels_*.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/interleave.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd_gemm.h"

namespace vllm::kernels {
namespace {

// The weight vectors of one 32-element block of 16 rows (4 runs of 64
// bytes at `runs`, a Q4_0 block's nibbles each): fn(w, x_offset) for each
// of the 8, x_offset being the first of the 4 activation bytes it meets
// (the low nibbles of run j meet 4j.., the high ones 16 + 4j..). With
// kFifthBits, `plane` holds the 64-byte fifth-bit plane (interleave.h):
// bit v of its bytes, moved to bit 4, is vector v's 16s.
template <class V, bool kFifthBits, int J, class Fn>
void nibble_run(const uint8_t* runs, const typename V::I& plane, Fn& fn) {
    using I = typename V::I;
    const I nibble = V::set1_8(0x0f);
    const I q = V::load(runs + 64 * J);
    I low = V::and_(q, nibble);
    I high = V::and_(V::template srl16<4>(q), nibble);
    if constexpr (kFifthBits) {
        // 16-bit shifts: what crosses into the other byte lands below bit 4
        // (left shifts of at most 4) or above it (right shifts), off the mask.
        const I sixteen = V::set1_8(0x10);
        low = V::or_(low, V::and_(V::template shift16<4 - J>(plane), sixteen));
        high = V::or_(high, V::and_(V::template shift16<-J>(plane), sixteen));
    }
    fn(low, 4 * J);
    fn(high, 16 + 4 * J);
}

template <class V, bool kFifthBits, class Fn, int... J>
void nibble_runs(const uint8_t* runs, const uint8_t* plane, Fn& fn, std::integer_sequence<int, J...>) {
    const typename V::I bits = kFifthBits ? V::load(plane) : V::zero();
    (nibble_run<V, kFifthBits, J>(runs, bits, fn), ...);
}

template <class V, bool kFifthBits, class Fn>
void for_each_nibble_weights(const uint8_t* runs, const uint8_t* plane, Fn&& fn) {
    nibble_runs<V, kFifthBits>(runs, plane, fn, std::make_integer_sequence<int, 4>{});
}

// Unsigned weights (of at most kMaxWeight) times the signed activations,
// with a per-row offset term; a 32-element block is 8 weight vectors.
template <class V, int kMax>
struct UnsignedWeightsDot {
    static constexpr bool kHasOffset = true;
    static constexpr int kMaxWeight = kMax;
    static constexpr int kVectors = 8;
    static typename V::I dot(typename V::I part, typename V::I w, typename V::I x) { return V::dot_part(part, w, x); }
};

// How far ahead of its reads a quantized tile asks for the weights (the
// first tile of tokens over a group; the others read it from cache), each
// format's kPrefetchBytes. An interleaved matrix is one stream, yet in a
// batch-1 decode the hardware prefetchers left memory idle while the Q5
// and K-quant tiles unpacked their weights: fetching 2 KiB ahead (about
// 3.5 KiB in flight on 2 threads at 23.5 GB/s) made decode-step matmuls
// over SmolLM2's Q5_K_M mix 1.3-2x faster and its Q6_K mix up to 1.4x,
// Q8_0 alone unchanged (bench_decode_matmuls on a loaded AVX2 machine).
// The formats slowest to unpack a byte (fifth bits, super-blocks) fetch
// 4 KiB ahead: on a Zen 4 at 2 KiB their memory still sat idle (Q5_1
// layers 11% and the Q5_K_M and Q6_K mixes 7-15% faster at 4 KiB), where
// Q8_0 and Q4_1 gained nothing (BENCHMARKS.md, "A Zen 4 machine").
constexpr int64_t kInterleavedPrefetchBytes = 2048;
constexpr int64_t kSlowUnpackPrefetchBytes = 4096;
// Q4_0 and Q4_1 (nibbles alone) fetch 8 KiB ahead. A decode step's
// matrices are short streams (0.1-0.6 MB a thread) that the hardware
// prefetchers ramp up on too late, and on a Zen 4 whose read loop reached
// 60-65 GB/s the step's Q4_1 matmuls took 2.7-3.0 ms at 2 KiB, 2.5-2.6 at
// 4 KiB and 2.1-2.3 at 8 KiB (16 KiB no better, 32 KiB worse); at 35 GB/s
// all three were alike. Q8_0 went the other way (2.8-3.0 ms at 2 KiB,
// 3.4-3.7 at 8 KiB), so it keeps 2 KiB (BENCHMARKS.md, "Thread pool
// shares, prefetch distances").
constexpr int64_t kNibblePrefetchBytes = 8192;

// The 32-element formats with nibbles (and, kPlaneOffset > 0, fifth bits).
template <class V, size_t kRunsOffset, size_t kPlaneOffset = 0>
struct InterleavedNibbles : UnsignedWeightsDot<V, (kPlaneOffset > 0 ? 31 : 15)> {
    static constexpr int64_t kPrefetchBytes = kPlaneOffset > 0 ? kSlowUnpackPrefetchBytes : kNibblePrefetchBytes;
    template <class Fn>
    static void for_each_weights(const uint8_t* block, Fn&& fn) {
        for_each_nibble_weights<V, (kPlaneOffset > 0)>(block + kRunsOffset, block + kPlaneOffset, fn);
    }
};

// w = d (q - 8): the offset -8 d.
template <class V>
struct InterleavedQ4_0 : InterleavedNibbles<V, kQ4_0GroupRunsOffset> {
    static constexpr size_t kBlockBytes = kQ4_0GroupBlockBytes;
    static typename V::F offset(const uint8_t* /*block*/, typename V::F d) { return V::mul(d, V::set1(-8.0f)); }
};

// w = d q + m: the offset m.
template <class V>
struct InterleavedQ4_1 : InterleavedNibbles<V, kQ4_1GroupRunsOffset> {
    static constexpr size_t kBlockBytes = kQ4_1GroupBlockBytes;
    static typename V::F offset(const uint8_t* block, typename V::F /*d*/) {
        return V::load_f16(reinterpret_cast<const uint16_t*>(block) + kInterleaveRows);
    }
};

// w = d (q - 16): the offset -16 d.
template <class V>
struct InterleavedQ5_0 : InterleavedNibbles<V, kQ5_0GroupRunsOffset, kQ5_0GroupPlaneOffset> {
    static constexpr size_t kBlockBytes = kQ5_0GroupBlockBytes;
    static typename V::F offset(const uint8_t* /*block*/, typename V::F d) { return V::mul(d, V::set1(-16.0f)); }
};

// w = d q + m: the offset m.
template <class V>
struct InterleavedQ5_1 : InterleavedNibbles<V, kQ5_1GroupRunsOffset, kQ5_1GroupPlaneOffset> {
    static constexpr size_t kBlockBytes = kQ5_1GroupBlockBytes;
    static typename V::F offset(const uint8_t* block, typename V::F /*d*/) {
        return V::load_f16(reinterpret_cast<const uint16_t*>(block) + kInterleaveRows);
    }
};

// Q4_K and Q5_K: w = d sc_j q - dmin m_j in sub-block j, whose 32
// elements are laid out as a Q4_0 block's (Q5_K: plus Q5_0's bit plane).
template <class V, size_t kBytes, size_t kPlaneOffset>
struct InterleavedK4K5 {
    using I = typename V::I;
    static constexpr size_t kBlockBytes = kBytes;
    static constexpr int64_t kPrefetchBytes = kSlowUnpackPrefetchBytes;
    static constexpr int kSubBlocks = 8;
    static constexpr int kSubBlockElements = 32;
    static constexpr int kVectors = 8;  // per sub-block
    static constexpr int kMaxWeight = kPlaneOffset > 0 ? 31 : 15;
    static constexpr bool kMinScale = true;
    static I dot(I part, I w, I x) { return V::dot_part(part, w, x); }
    template <class Fn>
    static void for_each_weights(const uint8_t* block, int j, Fn&& fn) {
        for_each_nibble_weights<V, (kPlaneOffset > 0)>(block + kQ4_KGroupRunsOffset + 256 * j,
                                                       block + kPlaneOffset + 64 * j, fn);
    }
    // The 16 rows' 6-bit scale of sub-block j, as int32 lanes.
    static I scale(const uint8_t* block, int j) {
        return V::and_(V::u8x16_to_i32(block + kQ4_KGroupScalesOffset + 16 * j), V::set1_8(0x3f));
    }
    // Their 6-bit min: the top two bits from the scale bytes' bits 6..7.
    static I min(const uint8_t* block, int j) {
        const I top = V::template srl16<2>(V::and_(V::u8x16_to_i32(block + kQ4_KGroupScalesOffset + 16 * j), V::set1_8(-64)));
        const I low = V::u8x16_to_i32(block + kQ4_KGroupMinsOffset + 16 * (j / 2));
        return V::or_(top, V::and_(j % 2 == 0 ? low : V::template srl16<4>(low), V::set1_8(0x0f)));
    }
    // The mins of sub-blocks 2p and 2p + 1 as int16 pairs.
    static I min_pair(const uint8_t* block, int p) { return V::pair16(min(block, 2 * p), min(block, 2 * p + 1)); }
    static typename V::F min_scale(const uint8_t* block) {
        return V::load_f16(reinterpret_cast<const uint16_t*>(block + kQ4_KGroupDminOffset));
    }
};

template <class V>
using InterleavedQ4_K = InterleavedK4K5<V, kQ4_KGroupBlockBytes, 0>;
template <class V>
using InterleavedQ5_K = InterleavedK4K5<V, kQ5_KGroupBlockBytes, kQ5_KGroupPlaneOffset>;

// Q6_K: w = d sc_j (q - 32) in 16-element sub-block j, so its mins are
// 32 sc_j, in units of d. Its 4 weight vectors (element quads k = 4j..4j
// + 3) take their low 4 bits from a nibble of low run k % 32 and their top
// 2 from bits 2 (k / 16) of high run k % 16, moved to bits 4..5.
template <class V>
struct InterleavedQ6_K {
    using I = typename V::I;
    static constexpr size_t kBlockBytes = kQ6_KGroupBlockBytes;
    static constexpr int64_t kPrefetchBytes = kSlowUnpackPrefetchBytes;
    static constexpr int kSubBlocks = 16;
    static constexpr int kSubBlockElements = 16;
    static constexpr int kVectors = 4;  // per sub-block
    static constexpr int kMaxWeight = 63;
    static constexpr bool kMinScale = false;
    static I dot(I part, I w, I x) { return V::dot_part(part, w, x); }
    template <class Fn>
    static void for_each_weights(const uint8_t* block, int j, Fn&& fn) {
        switch (j / 4) {
            case 0: quads<0>(block, j, fn); break;
            case 1: quads<1>(block, j, fn); break;
            case 2: quads<2>(block, j, fn); break;
            default: quads<3>(block, j, fn); break;
        }
    }
    template <int kHighPair, class Fn>
    static void quads(const uint8_t* block, int j, Fn& fn) {
        quads<kHighPair>(block, j, fn, std::make_integer_sequence<int, 4>{});
    }
    template <int kHighPair, class Fn, int... Q>
    static void quads(const uint8_t* block, int j, Fn& fn, std::integer_sequence<int, Q...>) {
        (quad<kHighPair, Q>(block, j, fn), ...);
    }
    template <int kHighPair, int Q, class Fn>
    static void quad(const uint8_t* block, int j, Fn& fn) {
        const int k = 4 * j + Q;
        const I ql = V::load(block + kQ6_KGroupLowOffset + 64 * (k % 32));
        const I low = V::and_(k < 32 ? ql : V::template srl16<4>(ql), V::set1_8(0x0f));
        const I qh = V::load(block + kQ6_KGroupHighOffset + 64 * (k % 16));
        const I high = V::and_(V::template shift16<4 - 2 * kHighPair>(qh), V::set1_8(0x30));
        fn(V::or_(low, high), 4 * Q);
    }
    static I scale(const uint8_t* block, int j) {
        return V::i8x16_to_i32(reinterpret_cast<const int8_t*>(block + kQ6_KGroupScalesOffset + 16 * j));
    }
    // 32 sc_j of sub-blocks 2p and 2p + 1 as int16 pairs (|32 sc| <= 4096).
    static I min_pair(const uint8_t* block, int p) {
        return V::template shift16<5>(V::pair16(scale(block, 2 * p), scale(block, 2 * p + 1)));
    }
};

// Q8_0's 8 runs of 64 bytes, each through `load` (unrolled, so the
// partial sums' widening points are fixed at compile time).
template <class Load, class Fn, int... J>
void q8_0_runs(const uint8_t* block, Load load, Fn& fn, std::integer_sequence<int, J...>) {
    (fn(load(block + kQ8_0GroupRunsOffset + 64 * J), 4 * J), ...);
}

// Q8_0 where the build's dot_part takes every u8 (V::dot_terms(255) > 0):
// the weights stored plus 128 (Q8_0Bytes::kPlus128), the offset -128 d
// taking the 128 back.
template <class V>
struct InterleavedQ8_0 : UnsignedWeightsDot<V, 255> {
    static constexpr size_t kBlockBytes = kQ8_0GroupBlockBytes;
    static constexpr int64_t kPrefetchBytes = kInterleavedPrefetchBytes;
    template <class Fn>
    static void for_each_weights(const uint8_t* block, Fn&& fn) {
        q8_0_runs(block, [](const uint8_t* p) { return V::load(p); }, fn, std::make_integer_sequence<int, 8>{});
    }
    static typename V::F offset(const uint8_t* /*block*/, typename V::F d) { return V::mul(d, V::set1(-128.0f)); }
};

// Q8_0 elsewhere: the weights stored signed (Q8_0Bytes::kSigned) and
// multiplied by the build's signed dot product (AVX2: |w| <= 128 times x
// with w's sign, which maddubs sums without saturating; NEON: SDOT), so no
// offset. (Stored plus 128, they took an xor back per weight vector: 6%
// of AVX2's Q8_0 tile at 512 tokens.)
template <class V>
struct InterleavedQ8_0Signed {
    static constexpr size_t kBlockBytes = kQ8_0GroupBlockBytes;
    static constexpr int64_t kPrefetchBytes = kInterleavedPrefetchBytes;
    static constexpr bool kHasOffset = false;
    static constexpr int kMaxWeight = 128;
    static constexpr int kVectors = 8;
    template <class Fn>
    static void for_each_weights(const uint8_t* block, Fn&& fn) {
        q8_0_runs(block, [](const uint8_t* p) { return V::s8_weights(V::load(p)); }, fn,
                  std::make_integer_sequence<int, 8>{});
    }
    static typename V::I dot(typename V::I part, const typename V::S8W& w, typename V::I x) {
        return V::dot_part_s8(part, w, V::s8_acts(x));
    }
};

// The two columns of a pair as floats, row r in lane r; slice<S>: rows
// s * S::kRows.. of them only, as the build's FloatSlice S pairs them.
template <class V>
struct InterleavedF16 {
    static void pair(const uint8_t* p, typename V::F& even, typename V::F& odd) {
        const auto* h = reinterpret_cast<const uint16_t*>(p);
        even = V::load_f16(h);
        odd = V::load_f16(h + kInterleaveRows);
    }
    template <class S>
    static void slice(const uint8_t* p, int s, typename S::F& low, typename S::F& high) {
        const auto* h = reinterpret_cast<const uint16_t*>(p) + s * S::kRows;
        S::f16_pairs(h, h + kInterleaveRows, low, high);
    }
};

template <class V>
struct InterleavedBF16 {
    static void pair(const uint8_t* p, typename V::F& even, typename V::F& odd) {
        const typename V::I v = V::load(p);
        even = V::bf16_low_halves(v);
        odd = V::bf16_high_halves(v);
    }
    template <class S>
    static void slice(const uint8_t* p, int s, typename S::F& low, typename S::F& high) {
        S::bf16_pairs(p + s * S::kRows * sizeof(uint32_t), low, high);
    }
};

// Tiles: run<T>(group, g, t0, y) takes T tokens from t0 against one
// 16-row group, writing y[t * y_stride + r].
template <class V, class Fmt>
struct FloatTiles {
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        using F = typename V::F;
        const float* x[T];
        for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const float*>(g.x + (t0 + t) * g.x_stride);
        // Even and odd columns sum apart: two FMA chains per token, so a
        // lone token (decode) is not bound by one chain's latency.
        F even_acc[T], odd_acc[T];
        for (int t = 0; t < T; ++t) even_acc[t] = odd_acc[t] = V::set1(0.0f);
        // The group's first tile asks for the next group's bytes as it
        // reads its own, a line a column pair: the FMAs of a group take long
        // enough that memory sat idle through them (AVX-512, an F16 model's
        // matmuls at 5 positions: 12.0-12.4 ms a step without, 8.4-8.7 with,
        // on a Zen 4). At 1-2 tokens the Zen 4 measured no difference, but
        // an Emerald Rapids Xeon's decode step took 16.1 ms without and
        // 10.2 with (bench_decode_matmuls 2 f16, BENCHMARKS.md).
        const bool prefetch = t0 == g.tok_begin;
        const int64_t next_group = kInterleaveRows * static_cast<int64_t>(g.w_stride);
        for (int64_t c = 0; c < g.cols; c += 2) {
            if (prefetch) prefetch_span(group, next_group + c / 2 * kFloatGroupPairBytes, kFloatGroupPairBytes);
            F even, odd;
            Fmt::pair(group + c / 2 * kFloatGroupPairBytes, even, odd);
            for (int t = 0; t < T; ++t) {
                even_acc[t] = V::fma_f(even, V::set1(x[t][c]), even_acc[t]);
                odd_acc[t] = V::fma_f(odd, V::set1(x[t][c + 1]), odd_acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) V::store_f32(y + t * g.y_stride, V::add(even_acc[t], odd_acc[t]));
    }
};

// The dot products of one block's (or sub-block's) Fmt::kVectors weight
// vectors, which for_each_weights(fn) passes to fn(w, x_offset), with T
// tokens' activations at xs[t] + x_offset: they collect in the layer's
// partial sums, which flush(part) takes every V::dot_terms(kMaxWeight)
// vectors and after the last.
template <class V, class Fmt, int T, class ForEach, class Flush>
void block_dots(ForEach&& for_each_weights, const int8_t* const* xs, Flush&& flush) {
    using I = typename V::I;
    constexpr int kTerms = V::dot_terms(Fmt::kMaxWeight) < Fmt::kVectors ? V::dot_terms(Fmt::kMaxWeight) : Fmt::kVectors;
    static_assert(kTerms > 0 && Fmt::kVectors % kTerms == 0, "whole runs of vectors between widenings");
    I part[T];
    for (int t = 0; t < T; ++t) part[t] = V::zero();
    int n = 0;  // vectors so far; a constant at each (unrolled) call of fn
    for_each_weights([&](const auto& w, int x_offset) {
        for (int t = 0; t < T; ++t) part[t] = Fmt::dot(part[t], w, V::bcast32(xs[t] + x_offset));
        if constexpr (kTerms < Fmt::kVectors) {
            if (++n % kTerms == 0 && n < Fmt::kVectors) {
                flush(static_cast<const I*>(part));
                for (int t = 0; t < T; ++t) part[t] = V::zero();
            }
        }
    });
    flush(static_cast<const I*>(part));
}
// Tiles of more tokens than a whole group's sums fit in registers: the
// group in slices of S::kRows rows (S = V::FloatSlice), a pass over the
// columns each. S holds a slice in two registers, low and high rows, each
// lane pair a row's even and odd column, which meet a token's activation
// pair broadcast as one FMA. Every lane does FloatTiles' arithmetic
// exactly (an even and an odd chain over the pairs in order, then their
// sum), so a token's result is bit for bit the same in either kind of tile.
template <class V, class Fmt>
struct FloatSliceTiles {
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        using S = typename V::FloatSlice;
        using F = typename S::F;
        const float* x[T];
        for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const float*>(g.x + (t0 + t) * g.x_stride);
        // The group's first tile of tokens asks for the next group's bytes
        // as it reads its own, half in each pass: the second pass computes
        // from cache, and with the whole next group asked for in the first
        // (as before) memory sat idle through it (3-6 tokens: 10-20% less
        // CPU time, BENCHMARKS.md); without any prefetch the slices gained
        // nothing over 2-token tiles.
        constexpr int kPasses = kInterleaveRows / S::kRows;
        constexpr int64_t kPrefetchStride = kFloatGroupPairBytes / kPasses;
        const bool prefetch = t0 == g.tok_begin;
        const int64_t next_group = kInterleaveRows * static_cast<int64_t>(g.w_stride);
        for (int s = 0; s < kPasses; ++s) {
            F low_acc[T], high_acc[T];
            for (int t = 0; t < T; ++t) low_acc[t] = high_acc[t] = S::zero();
            const int64_t ahead = next_group + s * (g.cols / 2) * kPrefetchStride;
            for (int64_t c = 0; c < g.cols; c += 2) {
                if (prefetch) prefetch_span(group, ahead + c / 2 * kPrefetchStride, kPrefetchStride);
                F low, high;
                Fmt::template slice<S>(group + c / 2 * kFloatGroupPairBytes, s, low, high);
                for (int t = 0; t < T; ++t) {
                    const F xt = S::set_pair(x[t] + c);
                    low_acc[t] = S::fma(low, xt, low_acc[t]);
                    high_acc[t] = S::fma(high, xt, high_acc[t]);
                }
            }
            for (int t = 0; t < T; ++t) S::store_rows(y + t * g.y_stride + s * S::kRows, low_acc[t], high_acc[t]);
        }
    }
};

// Up to V::kFloatGroupTokens tokens a whole group at a time, more in slices.
template <class V, class Fmt>
struct FloatGroupOrSliceTiles {
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        if constexpr (T <= V::kFloatGroupTokens) FloatTiles<V, Fmt>::template run<T>(group, g, t0, y);
        else FloatSliceTiles<V, Fmt>::template run<T>(group, g, t0, y);
    }
};

template <class V, class Fmt>
struct QuantTiles {
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        using I = typename V::I;
        using F = typename V::F;
        Q8x32Row x[T];
        for (int t = 0; t < T; ++t) x[t] = q8x32_row(g.x + (t0 + t) * g.x_stride, g.cols);
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::set1(0.0f);

        const bool prefetch = t0 == g.tok_begin;
        for (int64_t b = 0; b < g.cols / kQK; ++b) {
            const uint8_t* block = group + b * Fmt::kBlockBytes;
            if (prefetch) prefetch_span(block, Fmt::kPrefetchBytes, Fmt::kBlockBytes);
            const int8_t* xs[T];
            I sum[T];
            for (int t = 0; t < T; ++t) {
                xs[t] = x[t].qs + b * kQK;
                sum[t] = V::zero();
            }
            block_dots<V, Fmt, T>([&](auto&& fn) { Fmt::for_each_weights(block, fn); }, xs, [&](const I* part) {
                for (int t = 0; t < T; ++t) sum[t] = V::widen(sum[t], part[t]);
            });
            const F d = V::load_f16(reinterpret_cast<const uint16_t*>(block));
            for (int t = 0; t < T; ++t) acc[t] = V::fma_f(V::cvt(sum[t]), V::mul(d, V::set1(x[t].d[b])), acc[t]);
            if constexpr (Fmt::kHasOffset) {
                const F offset = Fmt::offset(block, d);
                for (int t = 0; t < T; ++t) acc[t] = V::fma_f(offset, V::set1(x[t].s[b]), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) V::store_f32(y + t * g.y_stride, acc[t]);
    }
};

// Tiles over super-block formats (Fmt: kSubBlocks sub-blocks of
// kSubBlockElements, each with its scale(block, j) as int32 lanes and its
// mins, two sub-blocks' a min_pair(block, p) of int16 pairs; d as fp16 per
// row at 0; the mins times min_scale(block) with kMinScale, else in units
// of d).
template <class V, class Fmt>
struct SuperBlockTiles {
    // The sum of a token's quantized activations over sub-block j of
    // super-block sb, from its 16-element sums (at most 32 * 127 in
    // magnitude: an int16).
    static int32_t activation_sum(const Q8x256Row& x, int64_t sb, int j) {
        constexpr int kSums = Fmt::kSubBlockElements / 16;
        int32_t sum = 0;
        for (int k = 0; k < kSums; ++k) sum += x.bsums[sb * (kQKK / 16) + j * kSums + k];
        return sum;
    }
    // Sub-blocks 2p and 2p + 1's activation sums as an int16 pair.
    static int32_t activation_pair(const Q8x256Row& x, int64_t sb, int p) {
        const uint32_t lo = static_cast<uint16_t>(activation_sum(x, sb, 2 * p));
        const uint32_t hi = static_cast<uint16_t>(activation_sum(x, sb, 2 * p + 1));
        return static_cast<int32_t>(lo | hi << 16);
    }
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        using I = typename V::I;
        using F = typename V::F;
        Q8x256Row x[T];
        for (int t = 0; t < T; ++t) x[t] = q8x256_row(g.x + (t0 + t) * g.x_stride, g.cols);
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::set1(0.0f);

        const bool prefetch = t0 == g.tok_begin;
        for (int64_t sb = 0; sb < g.cols / kQKK; ++sb) {
            const uint8_t* block = group + sb * Fmt::kBlockBytes;
            if (prefetch) prefetch_span(block, Fmt::kPrefetchBytes, Fmt::kBlockBytes);
            I scaled[T];
            for (int t = 0; t < T; ++t) scaled[t] = V::zero();
            for (int j = 0; j < Fmt::kSubBlocks; ++j) {
                const int8_t* xs[T];
                for (int t = 0; t < T; ++t) xs[t] = x[t].qs + sb * kQKK + j * Fmt::kSubBlockElements;
                const I sc = V::scale_lanes(Fmt::scale(block, j));
                block_dots<V, Fmt, T>([&](auto&& fn) { Fmt::for_each_weights(block, j, fn); }, xs, [&](const I* part) {
                    for (int t = 0; t < T; ++t) scaled[t] = V::widen_scaled(scaled[t], part[t], sc);
                });
            }
            I mins[T];
            for (int t = 0; t < T; ++t) mins[t] = V::zero();
            for (int p = 0; p < Fmt::kSubBlocks / 2; ++p) {
                const I m = Fmt::min_pair(block, p);
                for (int t = 0; t < T; ++t) {
                    const int32_t xsums = activation_pair(x[t], sb, p);
                    mins[t] = V::madd_i16(mins[t], m, V::bcast32(&xsums));
                }
            }
            const F d = V::load_f16(reinterpret_cast<const uint16_t*>(block));
            if constexpr (Fmt::kMinScale) {
                const F dmin = Fmt::min_scale(block);
                for (int t = 0; t < T; ++t) {
                    acc[t] = V::fma_f(V::cvt(scaled[t]), V::mul(d, V::set1(x[t].d[sb])), acc[t]);
                    acc[t] = V::fma_f(V::cvt(mins[t]), V::mul(dmin, V::set1(-x[t].d[sb])), acc[t]);
                }
            } else {
                for (int t = 0; t < T; ++t)
                    acc[t] = V::fma_f(V::cvt(V::sub32(scaled[t], mins[t])), V::mul(d, V::set1(x[t].d[sb])), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) V::store_f32(y + t * g.y_stride, acc[t]);
    }
};

using InterleavedTileFn = void (*)(const uint8_t* group, const GemmArgs&, int64_t t0, float* y);

// Tiles::run<1..kT>, indexed by the token count less one.
template <class Tiles, int... Ts>
struct InterleavedTiles {
    static constexpr InterleavedTileFn kFns[] = {&Tiles::template run<Ts + 1>...};
};

// The walk over an interleaved matrix with the tiles `fns` (fns[n - 1]
// takes n tokens, up to kT, and tile_rows rows, a multiple of 16 that
// divides row_end - row_begin): row_begin and row_end are multiples of 16.
template <int kT>
void gemm_interleaved_tiles(const GemmArgs& g, const InterleavedTileFn* fns, int64_t tile_rows = kInterleaveRows) {
    for (int64_t r = g.row_begin; r < g.row_end; r += tile_rows) {
        const uint8_t* group = g.w + r * g.w_stride;  // 16 rows take 16 row strides in either layout
        for (int64_t t = g.tok_begin; t < g.tok_end; t += kT) {
            const int n = static_cast<int>(g.tok_end - t < kT ? g.tok_end - t : kT);
            fns[n - 1](group, g, t, g.y + t * g.y_stride + r);
        }
    }
}

template <class Tiles, int... Ts>
constexpr const InterleavedTileFn* interleaved_tiles(std::integer_sequence<int, Ts...>) {
    return InterleavedTiles<Tiles, Ts...>::kFns;
}

// GemmFn over an interleaved quantized matrix (Q8x32 activations), kT
// tokens a tile.
template <class V, class Fmt, int kT = V::kInterleavedTokens>
void gemm_interleaved(const GemmArgs& g) {
    gemm_interleaved_tiles<kT>(
        g, interleaved_tiles<QuantTiles<V, Fmt>>(std::make_integer_sequence<int, kT>{}));
}

// GemmFn over an interleaved super-block matrix (Q8x256 activations).
template <class V, class Fmt>
void gemm_interleaved_super(const GemmArgs& g) {
    constexpr int kT = V::kInterleavedTokens;
    gemm_interleaved_tiles<kT>(
        g, interleaved_tiles<SuperBlockTiles<V, Fmt>>(std::make_integer_sequence<int, kT>{}));
}

// GemmFn over an interleaved float matrix (float activations).
template <class V, class Fmt>
void gemm_interleaved_float(const GemmArgs& g) {
    constexpr int kT = V::kFloatInterleavedTokens;
    gemm_interleaved_tiles<kT>(
        g, interleaved_tiles<FloatGroupOrSliceTiles<V, Fmt>>(std::make_integer_sequence<int, kT>{}));
}

}  // namespace
}  // namespace vllm::kernels
