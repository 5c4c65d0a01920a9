// The vector layer the generic kernels (simd_formats.h, simd_gemm.h,
// simd_quantize.h, simd_kernels.h) are written against, for AVX-512
// F/BW/VL/DQ/VNNI: one 512-bit register holds the 64 elements of a
// quantized step. Include only from *_avx512.cpp.
#pragma once
#include <utility>

#include "kernels/cpu/simd_x86.h"

namespace vllm::kernels {
namespace {

struct Avx512 {
    static constexpr const char* kName = "avx512";
    // 4 weight rows x 4 tokens (16 accumulators) measured best; wider or
    // taller tiles spill.
    static constexpr int kTileRows = 4;
    static constexpr int kTileTokens = 4;
    static constexpr int kFloats = 16;  // floats per F
    // Tokens per tile of the interleaved matmul (simd_interleaved.h).
    static constexpr int kInterleavedTokens = 8;
    // Tokens per tile of the interleaved float matmuls: a 16-row group's
    // sums take two registers a token, so every tile holds them whole.
    static constexpr int kFloatGroupTokens = 8;
    static constexpr int kFloatInterleavedTokens = 8;

    using I = __m512i;  // 64 int8, 32 int16 or 16 int32
    using F = __m512;   // 16 floats, lined up with the 16 int32 of an I
    using Acc = __m512;

    // --- bytes --------------------------------------------------------------
    static I zero() { return _mm512_setzero_si512(); }
    static I set1_8(int8_t v) { return _mm512_set1_epi8(v); }
    static I load(const void* p) { return _mm512_loadu_si512(p); }
    // The 4 bytes at p in every 32-bit lane.
    static I bcast32(const void* p) { return _mm512_set1_epi32(load_i32(p)); }
    static I load_half(const void* p) { return _mm512_zextsi256_si512(loadu_256(p)); }
    static I load_2x32(const void* a, const void* b) {
        return _mm512_inserti64x4(_mm512_castsi256_si512(loadu_256(a)), loadu_256(b), 1);
    }
    static I and_(I a, I b) { return _mm512_and_si512(a, b); }
    static I or_(I a, I b) { return _mm512_or_si512(a, b); }
    static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
    static I sub32(I a, I b) { return _mm512_sub_epi32(a, b); }
    static I mullo32(I a, I b) { return _mm512_mullo_epi32(a, b); }
    // 16 bytes at p as int32 lanes 0..15.
    static I u8x16_to_i32(const uint8_t* p) { return _mm512_cvtepu8_epi32(loadu_128(p)); }
    static I i8x16_to_i32(const int8_t* p) { return _mm512_cvtepi8_epi32(loadu_128(p)); }
    template <int N>
    static I srl16(I a) {
        return _mm512_srli_epi16(a, N);
    }
    // 16-bit lanes shifted left by S (right by -S when negative).
    template <int S>
    static I shift16(I a) {
        if constexpr (S > 0) return _mm512_slli_epi16(a, S);
        else if constexpr (S < 0) return _mm512_srli_epi16(a, -S);
        else return a;
    }

    // Two Q4 blocks of 16 bytes as 64 bytes in element order.
    static I nibbles_2x16(const void* a, const void* b) {
        const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu_128(a)), loadu_128(b), 1);
        const I abab = _mm512_castsi256_si512(ab);
        I v = _mm512_shuffle_i64x2(abab, abab, _MM_SHUFFLE(1, 1, 0, 0));  // a, a, b, b
        v = _mm512_mask_srli_epi16(v, 0xff00ff00u, v, 4);                   // high nibbles in the 2nd and 4th
        return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
    }
    // 32 bytes as their 32 low nibbles, then their 32 high nibbles.
    static I nibbles_32(const void* p) {
        const __m256i q = loadu_256(p);
        const I v = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
        return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
    }
    // 32 bytes twice, 16-bit lanes shifted by A in the first copy and by B
    // in the second (see shift16).
    template <int A, int B>
    static I dup32_shift(const void* p) {
        const __m256i q = loadu_256(p);
        return _mm512_inserti64x4(_mm512_castsi256_si512(kernels::shift16<A>(q)), kernels::shift16<B>(q), 1);
    }
    // Byte i is 0xff where bit i of `bits` is set, else 0.
    static I bit_mask_bytes(uint64_t bits) { return _mm512_movm_epi8(bits); }
    // table[index] for every byte (index 0..15).
    static I lookup16(const int8_t* table, I index) {
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(loadu_128(table)), index);
    }

    // --- integer dot products -------------------------------------------------
    // acc + the sums of 4 adjacent u8 * s8 products per int32 lane.
    static I dot_u8(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
    // acc + madd(maddubs(u, s), sc): u8 * s8 pairs summed to int16 (exact
    // for u < 128), then times the int16 scales, pairs summed to int32.
    static I madd_u8_i16(I acc, I u, I s, I sc) { return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(u, s), sc); }
    static I madd_i16(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }

    // --- partial dot products (the interleaved tiles; see simd_avx2.h) ---------
    // VNNI sums straight into int32, exact for every u8 (4 products of at
    // most 255 * 128 a lane per vector), so partial sums are int32 already.
    static constexpr int dot_terms(int max_u) { return 2147483647 / (4 * 128 * max_u); }
    static I dot_part(I part, I u, I s) { return dot_u8(part, u, s); }
    static I widen(I acc, I part) { return add32(acc, part); }
    static I pair16(I lo, I hi) { return _mm512_mask_blend_epi16(0xaaaaaaaau, lo, _mm512_slli_epi32(hi, 16)); }
    static I scale_lanes(I sc) { return sc; }
    static I widen_scaled(I acc, I part, I sc) { return add32(acc, mullo32(part, sc)); }

    // Signed x signed: VNNI multiplies u8 by s8, so weights are offset by
    // 128 (w ^ 0x80) and 128 * sum(x) is taken back out, once per token:
    // the per-token bias is the accumulator the dot product starts from.
    struct S8W {
        I u;
    };
    struct S8X {
        I x;
        I bias;
    };
    static S8W s8_weights(I w) { return {_mm512_xor_si512(w, set1_8(-128))}; }
    static S8X s8_acts(I x) { return {x, sub32(zero(), dot_u8(zero(), set1_8(-128), x))}; }
    static I dot_s8(const S8W& w, const S8X& x) { return dot_u8(x.bias, w.u, x.x); }

    // --- int16 scales ------------------------------------------------------------
    static I set1_16(int16_t v) { return _mm512_set1_epi16(v); }
    static I mullo16(I a, I b) { return _mm512_mullo_epi16(a, b); }
    static I sub16(I a, I b) { return _mm512_sub_epi16(a, b); }
    // 16 bytes (lo: bytes 0..7, hi: 8..15) as int16 in lanes 0..15.
    static I u8x16_to_i16(uint64_t lo, uint64_t hi) {
        return _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo))));
    }
    static I i8x16_to_i16(const int8_t* p) { return _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(loadu_128(p))); }
    // Lanes First .. First + N - 1 of v, each spread over 32 / N lanes.
    template <int N, int First>
    static I spread16(I v) {
        static_assert(N == 2 || N == 4, "2 or 4 scales per step");
        return _mm512_permutexvar_epi16(index16<N == 2 ? 4 : 3, First>(std::make_integer_sequence<int, 32>{}), v);
    }
    // Lanes First .. First + 7 of v, each twice, in lanes 0..15.
    template <int First>
    static I pairs16(I v) {
        return _mm512_maskz_permutexvar_epi16(0xffffu, index16<1, First>(std::make_integer_sequence<int, 32>{}), v);
    }
    // The constant index vector lane >> Shift + First.
    template <int Shift, int First, int... Lane>
    static I index16(std::integer_sequence<int, Lane...>) {
        return _mm512_set_epi16(static_cast<short>(((31 - Lane) >> Shift) + First)...);
    }

    // --- floats ----------------------------------------------------------------
    static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
    static F set1(float v) { return _mm512_set1_ps(v); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    // p[0] in lanes 0..7, p[1] in lanes 8..15: one scale per 32-element block.
    static F bcast2(const float* p) {
        return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_broadcast_ss(p)), _mm256_broadcast_ss(p + 1), 1);
    }
    // The fp16 at a in lanes 0..7, the one at b in lanes 8..15.
    static F f16_pair(const uint16_t* a, const uint16_t* b) {
        return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(broadcast_16(a)), broadcast_16(b), 1));
    }
    // Lanes 0 and 8 (one per block of a bcast2 / f16_pair vector) to p[0], p[1].
    static void store_pair(float* p, F v) {
        p[0] = _mm512_cvtss_f32(v);
        p[1] = _mm256_cvtss_f32(_mm512_extractf32x8_ps(v, 1));
    }
    static F load_f32(const float* p) { return _mm512_loadu_ps(p); }
    static F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(loadu_256(p)); }
    static F load_bf16(const uint16_t* p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(loadu_256(p)), 16));
    }
    // The bf16 in the low / high half of each 32-bit lane, as floats.
    static F bf16_low_halves(I v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
    static F bf16_high_halves(I v) { return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(~0xffff))); }
    static void store_f32(float* p, F v) { _mm512_storeu_ps(p, v); }
    static F fma_f(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }

    static Acc acc_zero() { return _mm512_setzero_ps(); }
    static Acc fma(F a, F b, Acc c) { return _mm512_fmadd_ps(a, b, c); }
    static Acc acc_add(Acc a, Acc b) { return _mm512_add_ps(a, b); }
    static float hsum(Acc a) { return _mm512_reduce_add_ps(a); }

    // --- activation quantization ------------------------------------------------
    static F abs(F v) { return _mm512_abs_ps(v); }
    static F max(F a, F b) { return _mm512_max_ps(a, b); }
    static float hmax(F v) { return _mm512_reduce_max_ps(v); }
    static I round_i32(F v) { return _mm512_cvtps_epi32(v); }  // to nearest even, like lrint
    static void store_i8(int8_t* p, I v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v)); }
    static int hsum_i32(I v) { return _mm512_reduce_add_epi32(v); }
};

}  // namespace
}  // namespace vllm::kernels
