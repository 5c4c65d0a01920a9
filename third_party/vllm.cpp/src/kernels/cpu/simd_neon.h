// The vector layer of the generic kernels (simd_formats.h, simd_gemm.h,
// simd_quantize.h, simd_kernels.h) for AArch64 Advanced SIMD (NEON). A
// kernel step's 64 elements are four 128-bit registers, v[0] holding
// elements 0..15 up to v[3] holding 48..63, so a lane of any width is
// numbered across the four in order: int32 lane L lies in v[L / 4], int16
// lane L in v[L / 8], float lane L in v[L / 4] of an F. Lanes 0..7 of
// int32 results and floats thus cover elements 0..31 (a block's 32), as
// in the x86 layers. (madd_u8_i16 is the one exception: see there.)
//
// Integer dot products use SDOT (vdotq_s32) when the file is compiled
// with it (kernels_neon_dotprod.cpp, -march=armv8.2-a+dotprod, called
// only on CPUs that report it), else widening multiplies and pairwise adds
// (SMULL + SADALP), which baseline AArch64 has. Either way int8 x int8
// products are exact in int16 and the sums exact in int32, so the two
// variants compute the same integers; only which products share an int32
// lane differs, always within one 16-byte register.
//
// Include only from *_neon.cpp / *_neon_dotprod.cpp: everything here has
// internal linkage, so each file keeps its own copy built with its flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

// The layer's functions are small and called in the kernels' inner loops:
// inlined by force, since GCC left some of them (and the format functions
// built on them) as calls passing four-register structs through memory.
#define VLLM_NEON_INLINE [[gnu::always_inline]] inline

namespace vllm::kernels {
namespace {

// acc + the products of a and b summed four bytes at a time into the four
// int32 lanes (which four bytes go to which lane depends on the variant).
VLLM_NEON_INLINE int32x4_t neon_dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

// Each 16-bit lane shifted left by S bits (right by -S when S < 0); as in
// the x86 layers callers mask the bytes afterwards.
template <int S>
VLLM_NEON_INLINE int8x16_t neon_shift16(int8x16_t v) {
    const uint16x8_t u = vreinterpretq_u16_s8(v);
    if constexpr (S > 0) return vreinterpretq_s8_u16(vshlq_n_u16(u, S));
    else if constexpr (S < 0) return vreinterpretq_s8_u16(vshrq_n_u16(u, -S));
    else return v;
}

VLLM_NEON_INLINE int8x16_t neon_load16(const void* p) { return vld1q_s8(static_cast<const int8_t*>(p)); }

struct Neon {
    static constexpr const char* kName = "neon";
    // 32 registers of 16 bytes, an operand of a step taking four: the same
    // register budget per operand as AVX2 (16 x 32 bytes, two per
    // operand), so the same 2 rows x 4 tokens tile.
    static constexpr int kTileRows = 2;
    static constexpr int kTileTokens = 4;
    static constexpr int kFloats = 16;
    // Tokens per tile of the interleaved matmul (simd_interleaved.h): its
    // sums and accumulators take four registers each. It needs each int32
    // lane's dot product over that lane's own four bytes, which only SDOT
    // gives (see neon_dot16): the plain build keeps the row layout.
#if defined(__ARM_FEATURE_DOTPROD)
    static constexpr int kInterleavedTokens = 2;
    static constexpr int kInterleavedSignedTokens = 2;  // Q8_0's (SDOT), as the others'
#else
    static constexpr int kInterleavedTokens = 0;
#endif
    // No interleaved float matmuls (F16 and BF16 keep the row layout).
    static constexpr int kFloatInterleavedTokens = 0;

    struct I {
        int8x16_t v[4];
    };
    struct F {
        float32x4_t v[4];
    };
    using Acc = float32x4_t;  // the four registers of an F fold into one

    // fn applied to the four registers.
    template <class Fn>
    VLLM_NEON_INLINE static I each(Fn fn) {
        return {{fn(0), fn(1), fn(2), fn(3)}};
    }
    template <class Fn>
    VLLM_NEON_INLINE static F each_f(Fn fn) {
        return {{fn(0), fn(1), fn(2), fn(3)}};
    }
    VLLM_NEON_INLINE static int32x4_t s32(int8x16_t v) { return vreinterpretq_s32_s8(v); }
    VLLM_NEON_INLINE static int16x8_t s16(int8x16_t v) { return vreinterpretq_s16_s8(v); }
    VLLM_NEON_INLINE static int8x16_t s8(int32x4_t v) { return vreinterpretq_s8_s32(v); }
    VLLM_NEON_INLINE static int8x16_t s8(int16x8_t v) { return vreinterpretq_s8_s16(v); }

    // --- bytes --------------------------------------------------------------
    VLLM_NEON_INLINE static I zero() { return each([](int) { return vdupq_n_s8(0); }); }
    VLLM_NEON_INLINE static I set1_8(int8_t v) { return each([v](int) { return vdupq_n_s8(v); }); }
    VLLM_NEON_INLINE static I load(const void* p) {
        const auto* b = static_cast<const uint8_t*>(p);
        return each([b](int j) { return neon_load16(b + 16 * j); });
    }
    // The 4 bytes at p in every 32-bit lane.
    VLLM_NEON_INLINE static I bcast32(const void* p) {
        int32_t v;
        std::memcpy(&v, p, sizeof v);
        const int8x16_t b = s8(vdupq_n_s32(v));
        return {{b, b, b, b}};
    }
    VLLM_NEON_INLINE static I load_half(const void* p) {
        const auto* b = static_cast<const uint8_t*>(p);
        return {{neon_load16(b), neon_load16(b + 16), vdupq_n_s8(0), vdupq_n_s8(0)}};
    }
    VLLM_NEON_INLINE static I load_2x32(const void* a, const void* b) {
        const auto* pa = static_cast<const uint8_t*>(a);
        const auto* pb = static_cast<const uint8_t*>(b);
        return {{neon_load16(pa), neon_load16(pa + 16), neon_load16(pb), neon_load16(pb + 16)}};
    }
    VLLM_NEON_INLINE static I and_(I a, I b) { return each([&](int j) { return vandq_s8(a.v[j], b.v[j]); }); }
    VLLM_NEON_INLINE static I or_(I a, I b) { return each([&](int j) { return vorrq_s8(a.v[j], b.v[j]); }); }
    VLLM_NEON_INLINE static I add32(I a, I b) { return each([&](int j) { return s8(vaddq_s32(s32(a.v[j]), s32(b.v[j]))); }); }
    VLLM_NEON_INLINE static I sub32(I a, I b) { return each([&](int j) { return s8(vsubq_s32(s32(a.v[j]), s32(b.v[j]))); }); }
    VLLM_NEON_INLINE static I mullo32(I a, I b) { return each([&](int j) { return s8(vmulq_s32(s32(a.v[j]), s32(b.v[j]))); }); }
    VLLM_NEON_INLINE static I u8x16_to_i32(const uint8_t* p) {
        const uint8x16_t q = vld1q_u8(p);
        const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_high_u8(q);
        return {{vreinterpretq_s8_u32(vmovl_u16(vget_low_u16(lo))), vreinterpretq_s8_u32(vmovl_high_u16(lo)),
                 vreinterpretq_s8_u32(vmovl_u16(vget_low_u16(hi))), vreinterpretq_s8_u32(vmovl_high_u16(hi))}};
    }
    VLLM_NEON_INLINE static I i8x16_to_i32(const int8_t* p) {
        const int8x16_t q = vld1q_s8(p);
        const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
        return {{vreinterpretq_s8_s32(vmovl_s16(vget_low_s16(lo))), vreinterpretq_s8_s32(vmovl_high_s16(lo)),
                 vreinterpretq_s8_s32(vmovl_s16(vget_low_s16(hi))), vreinterpretq_s8_s32(vmovl_high_s16(hi))}};
    }
    template <int N>
    VLLM_NEON_INLINE static I srl16(I a) {
        return each([&](int j) { return neon_shift16<-N>(a.v[j]); });
    }
    template <int S>
    VLLM_NEON_INLINE static I shift16(I a) {
        return each([&](int j) { return neon_shift16<S>(a.v[j]); });
    }
    // Two Q4 blocks of 16 bytes as 64 bytes in element order: a's low
    // nibbles, a's high nibbles, then b's.
    VLLM_NEON_INLINE static I nibbles_2x16(const void* a, const void* b) {
        const uint8x16_t qa = vld1q_u8(static_cast<const uint8_t*>(a));
        const uint8x16_t qb = vld1q_u8(static_cast<const uint8_t*>(b));
        const uint8x16_t mask = vdupq_n_u8(0x0f);
        return {{vreinterpretq_s8_u8(vandq_u8(qa, mask)), vreinterpretq_s8_u8(vshrq_n_u8(qa, 4)),
                 vreinterpretq_s8_u8(vandq_u8(qb, mask)), vreinterpretq_s8_u8(vshrq_n_u8(qb, 4))}};
    }
    // 32 bytes as their 32 low nibbles, then their 32 high nibbles.
    VLLM_NEON_INLINE static I nibbles_32(const void* p) {
        const uint8x16_t q0 = vld1q_u8(static_cast<const uint8_t*>(p));
        const uint8x16_t q1 = vld1q_u8(static_cast<const uint8_t*>(p) + 16);
        const uint8x16_t mask = vdupq_n_u8(0x0f);
        return {{vreinterpretq_s8_u8(vandq_u8(q0, mask)), vreinterpretq_s8_u8(vandq_u8(q1, mask)),
                 vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vreinterpretq_s8_u8(vshrq_n_u8(q1, 4))}};
    }
    // 32 bytes twice, 16-bit lanes shifted by A in the first copy and by B
    // in the second.
    template <int A, int B>
    VLLM_NEON_INLINE static I dup32_shift(const void* p) {
        const int8x16_t q0 = neon_load16(p);
        const int8x16_t q1 = neon_load16(static_cast<const uint8_t*>(p) + 16);
        return {{neon_shift16<A>(q0), neon_shift16<A>(q1), neon_shift16<B>(q0), neon_shift16<B>(q1)}};
    }
    // Byte i is 0xff where bit i of `bits` is set, else 0: register j takes
    // bytes 2j and 2j + 1 of `bits` 8 lanes each and tests one bit per lane.
    VLLM_NEON_INLINE static I bit_mask_bytes(uint64_t bits) {
        const uint8x16_t bytes = vcombine_u8(vcreate_u8(bits), vcreate_u8(0));
        const uint8x16_t select = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
        return each([&](int j) {
            const uint8x16_t index = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(2 * j)), vdup_n_u8(static_cast<uint8_t>(2 * j + 1)));
            return vreinterpretq_s8_u8(vtstq_u8(vqtbl1q_u8(bytes, index), select));
        });
    }
    // table[index] for every byte (index 0..15).
    VLLM_NEON_INLINE static I lookup16(const int8_t* table, I index) {
        const int8x16_t t = vld1q_s8(table);
        return each([&](int j) { return vqtbl1q_s8(t, vreinterpretq_u8_s8(index.v[j])); });
    }

    // --- integer dot products -------------------------------------------------
    // The weights here are below 128, so u8 x s8 is s8 x s8.
    VLLM_NEON_INLINE static I dot_u8(I acc, I u, I s) {
        return each([&](int j) { return s8(neon_dot16(s32(acc.v[j]), u.v[j], s.v[j])); });
    }
    // acc + (u . s) * sc, sc being spread16's output: one scale per
    // register, which this layer keeps widened to int32 (see spread16), so
    // the int32 dot products take it directly.
    //
    // Unlike the x86 layers this does not keep lanes apart: all 64
    // products land in v[0]'s four lanes (v[1..3] keep acc's). Its only
    // users, the super-block tiles (simd_gemm.h), take nothing but the
    // total of the accumulator's lanes, and an accumulator starting from
    // zero() then lives in one register instead of four: a 2 x 4 tile's
    // eight would fill all 32 otherwise. Summed apart from acc, so the
    // chain carried from step to step is one add.
    VLLM_NEON_INLINE static I madd_u8_i16(I acc, I u, I s, I sc) {
        const int32x4_t zero32 = vdupq_n_s32(0);
        int32x4_t p = vmulq_s32(neon_dot16(zero32, u.v[0], s.v[0]), s32(sc.v[0]));
        p = vmlaq_s32(p, neon_dot16(zero32, u.v[1], s.v[1]), s32(sc.v[1]));
        int32x4_t q = vmulq_s32(neon_dot16(zero32, u.v[2], s.v[2]), s32(sc.v[2]));
        q = vmlaq_s32(q, neon_dot16(zero32, u.v[3], s.v[3]), s32(sc.v[3]));
        acc.v[0] = s8(vaddq_s32(s32(acc.v[0]), vaddq_s32(p, q)));
        return acc;
    }
    // acc + the products of int16 lanes, adjacent pairs summed into int32
    // (as x86 madd: int32 lane k gets int16 lanes 2k and 2k + 1).
    VLLM_NEON_INLINE static I madd_i16(I acc, I a, I b) {
        return each([&](int j) {
            const int32x4_t lo = vmull_s16(vget_low_s16(s16(a.v[j])), vget_low_s16(s16(b.v[j])));
            const int32x4_t hi = vmull_high_s16(s16(a.v[j]), s16(b.v[j]));
            return s8(vaddq_s32(s32(acc.v[j]), vpaddq_s32(lo, hi)));
        });
    }

    // Signed x signed: SDOT / SMULL take both signs as they are.
    struct S8W {
        I w;
    };
    struct S8X {
        I x;
    };
    VLLM_NEON_INLINE static S8W s8_weights(I w) { return {w}; }
    VLLM_NEON_INLINE static S8X s8_acts(I x) { return {x}; }
    VLLM_NEON_INLINE static I dot_s8(const S8W& w, const S8X& x) { return dot_u8(zero(), w.w, x.x); }
    VLLM_NEON_INLINE static I dot_part_s8(I part, const S8W& w, const S8X& x) { return dot_u8(part, w.w, x.x); }

    // --- partial dot products (the interleaved tiles; see simd_avx2.h) ---------
    // SDOT sums straight into int32 (4 products of at most 128 * 128 a lane
    // per vector), so partial sums are int32 already. Its operands are
    // signed: weights of magnitude up to 128 (Q8_0's signed ones; the
    // unsigned formats' stay below 64), not Q8_0's unsigned 255.
    static constexpr int dot_terms(int max_u) { return max_u <= 128 ? 2147483647 / (4 * 128 * max_u) : 0; }
    VLLM_NEON_INLINE static I dot_part(I part, I u, I s) { return dot_u8(part, u, s); }
    VLLM_NEON_INLINE static I widen(I acc, I part) { return add32(acc, part); }
    // (hi << 16) | (lo & 0xffff) per int32 lane.
    VLLM_NEON_INLINE static I pair16(I lo, I hi) {
        return each([&](int j) { return s8(vsliq_n_s32(s32(lo.v[j]), s32(hi.v[j]), 16)); });
    }
    VLLM_NEON_INLINE static I scale_lanes(I sc) { return sc; }
    VLLM_NEON_INLINE static I widen_scaled(I acc, I part, I sc) { return add32(acc, mullo32(part, sc)); }

    // --- int16 scales ------------------------------------------------------------
    VLLM_NEON_INLINE static I set1_16(int16_t v) { return each([v](int) { return s8(vdupq_n_s16(v)); }); }
    VLLM_NEON_INLINE static I mullo16(I a, I b) { return each([&](int j) { return s8(vmulq_s16(s16(a.v[j]), s16(b.v[j]))); }); }
    VLLM_NEON_INLINE static I sub16(I a, I b) { return each([&](int j) { return s8(vsubq_s16(s16(a.v[j]), s16(b.v[j]))); }); }
    // 16 bytes (lo: bytes 0..7, hi: 8..15) as int16 in lanes 0..15.
    VLLM_NEON_INLINE static I u8x16_to_i16(uint64_t lo, uint64_t hi) {
        return {{vreinterpretq_s8_u16(vmovl_u8(vcreate_u8(lo))), vreinterpretq_s8_u16(vmovl_u8(vcreate_u8(hi))),
                 vdupq_n_s8(0), vdupq_n_s8(0)}};
    }
    VLLM_NEON_INLINE static I i8x16_to_i16(const int8_t* p) {
        const int8x16_t b = vld1q_s8(p);
        return {{s8(vmovl_s8(vget_low_s8(b))), s8(vmovl_high_s8(b)), vdupq_n_s8(0), vdupq_n_s8(0)}};
    }
    // Int16 lane L of v, as an int32 in every lane.
    template <int L>
    VLLM_NEON_INLINE static int8x16_t lane16_as_i32(I v) {
        return s8(vdupq_n_s32(vgetq_lane_s16(s16(v.v[L / 8]), L % 8)));
    }
    // Scales First .. First + N - 1 of v, each for 64 / N elements: one
    // per register (N = 4) or per pair of registers (N = 2). Unlike the x86
    // layers' int16 lanes, each scale fills its registers as int32 lanes,
    // the form madd_u8_i16 multiplies by.
    template <int N, int First>
    VLLM_NEON_INLINE static I spread16(I v) {
        static_assert(N == 2 || N == 4, "2 or 4 scales per step");
        if constexpr (N == 2) {
            const int8x16_t a = lane16_as_i32<First>(v), b = lane16_as_i32<First + 1>(v);
            return {{a, a, b, b}};
        } else {
            return {{lane16_as_i32<First>(v), lane16_as_i32<First + 1>(v), lane16_as_i32<First + 2>(v),
                     lane16_as_i32<First + 3>(v)}};
        }
    }
    // Int16 lanes First .. First + 7 of v, each twice, in lanes 0..15.
    template <int First>
    VLLM_NEON_INLINE static I pairs16(I v) {
        static_assert(First == 0 || First == 8, "one register's 8 lanes");
        const int16x8_t h = s16(v.v[First / 8]);
        return {{s8(vzip1q_s16(h, h)), s8(vzip2q_s16(h, h)), vdupq_n_s8(0), vdupq_n_s8(0)}};
    }

    // --- floats ----------------------------------------------------------------
    VLLM_NEON_INLINE static F cvt(I v) { return each_f([&](int j) { return vcvtq_f32_s32(s32(v.v[j])); }); }
    VLLM_NEON_INLINE static F set1(float v) { return each_f([v](int) { return vdupq_n_f32(v); }); }
    VLLM_NEON_INLINE static F mul(F a, F b) { return each_f([&](int j) { return vmulq_f32(a.v[j], b.v[j]); }); }
    // p[0] in lanes 0..7, p[1] in lanes 8..15: one scale per 32-element block.
    VLLM_NEON_INLINE static F bcast2(const float* p) {
        const float32x4_t a = vdupq_n_f32(p[0]), b = vdupq_n_f32(p[1]);
        return {{a, a, b, b}};
    }
    // The fp16 at a in lanes 0..7, the one at b in lanes 8..15 (FCVTL
    // converts exactly, subnormals included).
    VLLM_NEON_INLINE static float32x4_t f16x4(uint16x4_t h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
    VLLM_NEON_INLINE static F f16_pair(const uint16_t* a, const uint16_t* b) {
        const float32x4_t fa = f16x4(vdup_n_u16(*a)), fb = f16x4(vdup_n_u16(*b));
        return {{fa, fa, fb, fb}};
    }
    // Lanes 0 and 8 (one per block of a bcast2 / f16_pair vector) to p[0], p[1].
    VLLM_NEON_INLINE static void store_pair(float* p, F v) {
        p[0] = vgetq_lane_f32(v.v[0], 0);
        p[1] = vgetq_lane_f32(v.v[2], 0);
    }
    VLLM_NEON_INLINE static F load_f32(const float* p) { return each_f([p](int j) { return vld1q_f32(p + 4 * j); }); }
    VLLM_NEON_INLINE static F load_f16(const uint16_t* p) { return each_f([p](int j) { return f16x4(vld1_u16(p + 4 * j)); }); }
    VLLM_NEON_INLINE static F load_bf16(const uint16_t* p) {
        return each_f([p](int j) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p + 4 * j), 16)); });
    }
    VLLM_NEON_INLINE static void store_f32(float* p, F v) {
        for (int j = 0; j < 4; ++j) vst1q_f32(p + 4 * j, v.v[j]);
    }
    VLLM_NEON_INLINE static F fma_f(F a, F b, F c) { return each_f([&](int j) { return vfmaq_f32(c.v[j], a.v[j], b.v[j]); }); }

    VLLM_NEON_INLINE static Acc acc_zero() { return vdupq_n_f32(0.0f); }
    // The four products are summed apart from c and added to it once, so
    // the chain carried from step to step is one add, not four FMAs.
    VLLM_NEON_INLINE static Acc fma(F a, F b, Acc c) {
        float32x4_t t = vmulq_f32(a.v[0], b.v[0]);
        t = vfmaq_f32(t, a.v[1], b.v[1]);
        t = vfmaq_f32(t, a.v[2], b.v[2]);
        t = vfmaq_f32(t, a.v[3], b.v[3]);
        return vaddq_f32(c, t);
    }
    VLLM_NEON_INLINE static Acc acc_add(Acc a, Acc b) { return vaddq_f32(a, b); }
    VLLM_NEON_INLINE static float hsum(Acc a) { return vaddvq_f32(a); }

    // --- activation quantization ------------------------------------------------
    VLLM_NEON_INLINE static F abs(F v) { return each_f([&](int j) { return vabsq_f32(v.v[j]); }); }
    // maxNum, like the scalar build's std::fmax.
    VLLM_NEON_INLINE static F max(F a, F b) { return each_f([&](int j) { return vmaxnmq_f32(a.v[j], b.v[j]); }); }
    VLLM_NEON_INLINE static float hmax(F v) { return vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(v.v[0], v.v[1]), vmaxnmq_f32(v.v[2], v.v[3]))); }
    // To nearest, ties to even, like lrint in the default rounding mode.
    VLLM_NEON_INLINE static I round_i32(F v) { return each([&](int j) { return s8(vcvtnq_s32_f32(v.v[j])); }); }
    // The 16 int32 lanes (all within int8 here) as 16 bytes.
    VLLM_NEON_INLINE static void store_i8(int8_t* p, I v) {
        const int16x8_t lo = vmovn_high_s32(vmovn_s32(s32(v.v[0])), s32(v.v[1]));
        const int16x8_t hi = vmovn_high_s32(vmovn_s32(s32(v.v[2])), s32(v.v[3]));
        vst1q_s8(p, vmovn_high_s16(vmovn_s16(lo), hi));
    }
    VLLM_NEON_INLINE static int hsum_i32(I v) {
        return vaddvq_s32(vaddq_s32(vaddq_s32(s32(v.v[0]), s32(v.v[1])), vaddq_s32(s32(v.v[2]), s32(v.v[3]))));
    }
};

}  // namespace
}  // namespace vllm::kernels
