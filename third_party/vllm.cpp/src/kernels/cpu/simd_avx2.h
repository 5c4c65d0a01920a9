// The vector layer of simd_avx512.h for AVX2 + FMA + F16C: a kernel step's
// 64 elements are a pair of 256-bit registers (lo = elements 0..31, hi =
// 32..63), and integer dot products use maddubs / madd in place of VNNI.
// Include only from *_avx2.cpp.
#pragma once
#include "kernels/cpu/simd_x86.h"

namespace vllm::kernels {
namespace {

struct Avx2 {
    static constexpr const char* kName = "avx2";
    // 16 registers, and a step's operands take two each: 2 rows x 4 tokens
    // (8 accumulators) measured best; wider tiles spill.
    static constexpr int kTileRows = 2;
    static constexpr int kTileTokens = 4;
    static constexpr int kFloats = 16;
    // Tokens per tile of the interleaved matmul (simd_interleaved.h): its
    // sums and accumulators take two registers each, so 4 tokens spill
    // some accumulators, yet measured 10-20% faster than 2 (each decoded
    // weight vector serves twice the tokens).
    static constexpr int kInterleavedTokens = 4;
    // Q8_0's tiles (the signed dot product, InterleavedQ8_0Signed) widen
    // every vector's pair sums at once (dot_terms(128) is 1), so each token
    // keeps two int32 sums live where the other formats' int16 parts come
    // and go: 3 tokens spill fewer of them and measured 8-10% faster at 512
    // tokens than 4 (about the same at 16; test_kernels --bench 1 Q8_0).
    static constexpr int kInterleavedSignedTokens = 3;
    // Tokens per tile of the interleaved float matmuls (simd_interleaved.h)
    // with a whole 16-row group's sums in registers: four a token (two
    // chains of two halves), so 2 tokens. Wider tiles take the group in
    // FloatSlice's 8-row slices, one pass over the columns each (two
    // registers a token): 6 tokens, so the weights are widened to float
    // once per 6 tokens instead of once per 2, and the passes fetch the
    // next group meanwhile. 4 to 8 tokens over a matrix in DRAM took
    // 10-20% less CPU time than in 2-token tiles (test_kernels
    // --bench-small-m, one thread, alternating, loaded machine); 12-16
    // tokens are bound by the FMAs either way.
    static constexpr int kFloatGroupTokens = 2;
    static constexpr int kFloatInterleavedTokens = 6;
    // A slice's 8 rows as two registers of 4 rows each, a row's even and
    // odd column side by side (lanes 2i, 2i + 1: the two chains of row i),
    // so one 64-bit broadcast of a token's activation pair meets both
    // columns: one broadcast per two FMAs, where a register of one column
    // took one per FMA (half the loads beside the weights'; measured alone
    // within the shared machine's noise of the one-column slices, the
    // prefetch spread over both passes is what gained, BENCHMARKS.md).
    struct FloatSlice {
        using F = __m256;
        static constexpr int kRows = 8;
        // From the 8 rows' fp16 of the even column and of the odd one.
        static void f16_pairs(const uint16_t* even, const uint16_t* odd, F& rows_0_3, F& rows_4_7) {
            const __m128i e = loadu_128(even), o = loadu_128(odd);
            rows_0_3 = _mm256_cvtph_ps(_mm_unpacklo_epi16(e, o));
            rows_4_7 = _mm256_cvtph_ps(_mm_unpackhi_epi16(e, o));
        }
        // From the 8 rows' bf16 pairs (a row's pair in 32 bits, even low).
        static void bf16_pairs(const uint8_t* p, F& rows_0_3, F& rows_4_7) {
            const auto widen = [](__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); };
            rows_0_3 = widen(loadu_128(p));
            rows_4_7 = widen(loadu_128(p + 16));
        }
        static F zero() { return _mm256_setzero_ps(); }
        // x[0], x[1] in every even and odd lane.
        static F set_pair(const float* x) {
            double pair;
            std::memcpy(&pair, x, sizeof pair);
            return _mm256_castpd_ps(_mm256_set1_pd(pair));
        }
        static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
        // Rows 0..7's even + odd chains, in row order (hadd yields rows 0, 1,
        // 4, 5 | 2, 3, 6, 7).
        static void store_rows(float* p, F rows_0_3, F rows_4_7) {
            const __m256 sums = _mm256_hadd_ps(rows_0_3, rows_4_7);
            _mm256_storeu_ps(p, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sums), _MM_SHUFFLE(3, 1, 2, 0))));
        }
    };

    struct I {
        __m256i lo, hi;
    };
    struct F {
        __m256 lo, hi;
    };
    using Acc = __m256;  // both halves of an F fold into one accumulator

    // --- bytes --------------------------------------------------------------
    static I zero() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
    static I set1_8(int8_t v) { return {_mm256_set1_epi8(v), _mm256_set1_epi8(v)}; }
    static I load(const void* p) { return {loadu_256(p), loadu_256(static_cast<const uint8_t*>(p) + 32)}; }
    // The 4 bytes at p in every 32-bit lane.
    static I bcast32(const void* p) {
        const __m256i v = _mm256_set1_epi32(load_i32(p));
        return {v, v};
    }
    static I load_half(const void* p) { return {loadu_256(p), _mm256_setzero_si256()}; }
    static I load_2x32(const void* a, const void* b) { return {loadu_256(a), loadu_256(b)}; }
    static I and_(I a, I b) { return {_mm256_and_si256(a.lo, b.lo), _mm256_and_si256(a.hi, b.hi)}; }
    static I or_(I a, I b) { return {_mm256_or_si256(a.lo, b.lo), _mm256_or_si256(a.hi, b.hi)}; }
    static I add32(I a, I b) { return {_mm256_add_epi32(a.lo, b.lo), _mm256_add_epi32(a.hi, b.hi)}; }
    static I sub32(I a, I b) { return {_mm256_sub_epi32(a.lo, b.lo), _mm256_sub_epi32(a.hi, b.hi)}; }
    static I mullo32(I a, I b) { return {_mm256_mullo_epi32(a.lo, b.lo), _mm256_mullo_epi32(a.hi, b.hi)}; }
    static I u8x16_to_i32(const uint8_t* p) {
        const __m128i q = loadu_128(p);
        return {_mm256_cvtepu8_epi32(q), _mm256_cvtepu8_epi32(_mm_bsrli_si128(q, 8))};
    }
    static I i8x16_to_i32(const int8_t* p) {
        const __m128i q = loadu_128(p);
        return {_mm256_cvtepi8_epi32(q), _mm256_cvtepi8_epi32(_mm_bsrli_si128(q, 8))};
    }
    template <int N>
    static I srl16(I a) {
        return {_mm256_srli_epi16(a.lo, N), _mm256_srli_epi16(a.hi, N)};
    }
    template <int S>
    static I shift16(I a) {
        return {kernels::shift16<S>(a.lo), kernels::shift16<S>(a.hi)};
    }
    static I nibbles_2x16(const void* a, const void* b) { return {nibbles_16(a), nibbles_16(b)}; }
    static I nibbles_32(const void* p) {
        const __m256i q = loadu_256(p);
        const __m256i mask = _mm256_set1_epi8(0x0f);
        return {_mm256_and_si256(q, mask), _mm256_and_si256(_mm256_srli_epi16(q, 4), mask)};
    }
    template <int A, int B>
    static I dup32_shift(const void* p) {
        const __m256i q = loadu_256(p);
        return {kernels::shift16<A>(q), kernels::shift16<B>(q)};
    }
    static I bit_mask_bytes(uint64_t bits) {
        return {bit_mask_32(static_cast<uint32_t>(bits)), bit_mask_32(static_cast<uint32_t>(bits >> 32))};
    }
    static I lookup16(const int8_t* table, I index) {
        const __m256i t = _mm256_broadcastsi128_si256(loadu_128(table));
        return {_mm256_shuffle_epi8(t, index.lo), _mm256_shuffle_epi8(t, index.hi)};
    }

    // --- integer dot products -------------------------------------------------
    // maddubs saturates its int16 pair sums, so u must stay below 128 (the
    // quantized weights here are at most 63).
    static I dot_u8(I acc, I u, I s) {
        const __m256i ones = _mm256_set1_epi16(1);
        return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(_mm256_maddubs_epi16(u.lo, s.lo), ones)),
                _mm256_add_epi32(acc.hi, _mm256_madd_epi16(_mm256_maddubs_epi16(u.hi, s.hi), ones))};
    }
    static I madd_u8_i16(I acc, I u, I s, I sc) {
        return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(_mm256_maddubs_epi16(u.lo, s.lo), sc.lo)),
                _mm256_add_epi32(acc.hi, _mm256_madd_epi16(_mm256_maddubs_epi16(u.hi, s.hi), sc.hi))};
    }
    static I madd_i16(I acc, I a, I b) {
        return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(a.lo, b.lo)),
                _mm256_add_epi32(acc.hi, _mm256_madd_epi16(a.hi, b.hi))};
    }

    // --- partial dot products (the interleaved tiles) ---------------------------
    // maddubs' pair sums collect in int16 lanes and are widened to int32
    // (one madd) once per dot_terms vectors instead of once per vector:
    // half the multiplies. Exact while that many pair sums, each at most
    // 2 * 127 * max_u (the activations never reach -128), fit in int16.
    static constexpr int dot_terms(int max_u) { return 32767 / (2 * 127 * max_u); }
    // The running sums pass through an empty asm, which keeps their adds
    // one chain per register: GCC would otherwise reassociate a block's
    // adds into a tree, compute all its products first and spill them.
    static I chained(I sum) {
        asm("" : "+x"(sum.lo), "+x"(sum.hi));
        return sum;
    }
    static I dot_part(I part, I u, I s) {
        return chained({_mm256_add_epi16(part.lo, _mm256_maddubs_epi16(u.lo, s.lo)),
                        _mm256_add_epi16(part.hi, _mm256_maddubs_epi16(u.hi, s.hi))});
    }
    static I widen(I acc, I part) { return chained(madd_i16(acc, part, set1_16(1))); }
    // Int32 lanes holding int16 values as (lo, hi) int16 pairs: lo's value
    // in the low half of each lane, hi's in the high half (madd's operands).
    static I pair16(I lo, I hi) {
        return {_mm256_blend_epi16(lo.lo, _mm256_slli_epi32(hi.lo, 16), 0xaa),
                _mm256_blend_epi16(lo.hi, _mm256_slli_epi32(hi.hi, 16), 0xaa)};
    }
    // Int32 scales as widen_scaled takes them: in both int16 halves, so
    // madd multiplies each half of a partial sum by its lane's scale.
    static I scale_lanes(I sc) { return pair16(sc, sc); }
    static I widen_scaled(I acc, I part, I sc) { return chained(madd_i16(acc, part, sc)); }

    // Signed x signed: |w| * (x with w's sign), which maddubs sums without
    // saturating since the activations never reach -128.
    struct S8W {
        I abs, sign;
    };
    struct S8X {
        I x;
    };
    static S8W s8_weights(I w) { return {{_mm256_abs_epi8(w.lo), _mm256_abs_epi8(w.hi)}, w}; }
    static S8X s8_acts(I x) { return {x}; }
    static I signed_acts(const S8W& w, const S8X& x) {
        return {_mm256_sign_epi8(x.x.lo, w.sign.lo), _mm256_sign_epi8(x.x.hi, w.sign.hi)};
    }
    static I dot_s8(const S8W& w, const S8X& x) { return dot_u8(zero(), w.abs, signed_acts(w, x)); }
    // dot_part of signed weights: |w| is at most 128 (see dot_terms).
    static I dot_part_s8(I part, const S8W& w, const S8X& x) { return dot_part(part, w.abs, signed_acts(w, x)); }

    // --- int16 scales (see simd_avx512.h) ----------------------------------------
    static I set1_16(int16_t v) { return {_mm256_set1_epi16(v), _mm256_set1_epi16(v)}; }
    static I mullo16(I a, I b) { return {_mm256_mullo_epi16(a.lo, b.lo), _mm256_mullo_epi16(a.hi, b.hi)}; }
    static I sub16(I a, I b) { return {_mm256_sub_epi16(a.lo, b.lo), _mm256_sub_epi16(a.hi, b.hi)}; }
    static I u8x16_to_i16(uint64_t lo, uint64_t hi) {
        return {_mm256_cvtepu8_epi16(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo))),
                _mm256_setzero_si256()};
    }
    static I i8x16_to_i16(const int8_t* p) { return {_mm256_cvtepi8_epi16(loadu_128(p)), _mm256_setzero_si256()}; }
    template <int N, int First>
    static I spread16(I v) {
        static_assert(N == 2 || N == 4, "2 or 4 scales per step");
        if constexpr (N == 2)
            return {_mm256_broadcastsi128_si256(lane16<First>(v.lo)), _mm256_broadcastsi128_si256(lane16<First + 1>(v.lo))};
        else
            return {_mm256_setr_m128i(lane16<First>(v.lo), lane16<First + 1>(v.lo)),
                    _mm256_setr_m128i(lane16<First + 2>(v.lo), lane16<First + 3>(v.lo))};
    }
    // Lane K of v in all 8 lanes.
    template <int K>
    static __m128i lane16(__m256i v) {
        const __m128i half = K < 8 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1);
        return _mm_broadcastw_epi16(_mm_bsrli_si128(half, 2 * (K % 8)));
    }
    template <int First>
    static I pairs16(I v) {
        static_assert(First == 0 || First == 8, "a 128-bit half of the 16 lanes");
        const __m128i half = First == 0 ? _mm256_castsi256_si128(v.lo) : _mm256_extracti128_si256(v.lo, 1);
        return {_mm256_setr_m128i(_mm_unpacklo_epi16(half, half), _mm_unpackhi_epi16(half, half)), _mm256_setzero_si256()};
    }

    // --- floats ----------------------------------------------------------------
    static F cvt(I v) { return {_mm256_cvtepi32_ps(v.lo), _mm256_cvtepi32_ps(v.hi)}; }
    static F set1(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
    static F mul(F a, F b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
    static F add(F a, F b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
    static F bcast2(const float* p) { return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p + 1)}; }
    static F f16_pair(const uint16_t* a, const uint16_t* b) {
        return {_mm256_cvtph_ps(broadcast_16(a)), _mm256_cvtph_ps(broadcast_16(b))};
    }
    static void store_pair(float* p, F v) {
        p[0] = _mm256_cvtss_f32(v.lo);
        p[1] = _mm256_cvtss_f32(v.hi);
    }
    static F load_f32(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static F load_f16(const uint16_t* p) { return {_mm256_cvtph_ps(loadu_128(p)), _mm256_cvtph_ps(loadu_128(p + 8))}; }
    static F load_bf16(const uint16_t* p) {
        const auto widen = [](__m128i h) {
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        };
        return {widen(loadu_128(p)), widen(loadu_128(p + 8))};
    }
    // The bf16 in the low / high half of each 32-bit lane, as floats.
    static F bf16_low_halves(I v) {
        return {_mm256_castsi256_ps(_mm256_slli_epi32(v.lo, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(v.hi, 16))};
    }
    static F bf16_high_halves(I v) {
        const __m256i high = _mm256_set1_epi32(~0xffff);
        return {_mm256_castsi256_ps(_mm256_and_si256(v.lo, high)), _mm256_castsi256_ps(_mm256_and_si256(v.hi, high))};
    }
    static void store_f32(float* p, F v) {
        _mm256_storeu_ps(p, v.lo);
        _mm256_storeu_ps(p + 8, v.hi);
    }
    static F fma_f(F a, F b, F c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }

    static Acc acc_zero() { return _mm256_setzero_ps(); }
    static Acc fma(F a, F b, Acc c) { return _mm256_fmadd_ps(a.hi, b.hi, _mm256_fmadd_ps(a.lo, b.lo, c)); }
    static Acc acc_add(Acc a, Acc b) { return _mm256_add_ps(a, b); }
    static float hsum(Acc a) { return hsum_256(a); }

    // --- activation quantization ------------------------------------------------
    static F abs(F v) {
        const __m256 mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        return {_mm256_and_ps(v.lo, mask), _mm256_and_ps(v.hi, mask)};
    }
    static F max(F a, F b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
    static float hmax(F v) {
        const __m256 m8 = _mm256_max_ps(v.lo, v.hi);
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        return _mm_cvtss_f32(m);
    }
    static I round_i32(F v) { return {_mm256_cvtps_epi32(v.lo), _mm256_cvtps_epi32(v.hi)}; }
    static void store_i8(int8_t* p, I v) {
        // packs works within 128-bit lanes; the permute restores element order.
        const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(v.lo, v.hi), _MM_SHUFFLE(3, 1, 2, 0));
        const __m128i b8 = _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b8);
    }
    static int hsum_i32(I v) {
        const __m256i s8 = _mm256_add_epi32(v.lo, v.hi);
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
        return _mm_cvtsi128_si32(s);
    }
};

}  // namespace
}  // namespace vllm::kernels
