// 256-bit helpers shared by the AVX2 and AVX-512 vector layers
// (simd_avx2.h, simd_avx512.h). Include only from *_avx2.cpp / *_avx512.cpp
// files: everything here has internal linkage, so each ISA build keeps its
// own copy compiled with its own flags.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace vllm::kernels {
namespace {

inline __m256i loadu_256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i loadu_128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline int load_i32(const void* p) {
    int v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The 16-bit value at p in all 8 lanes (one vpbroadcastw from memory).
inline __m128i broadcast_16(const uint16_t* p) { return _mm_broadcastw_epi16(_mm_loadu_si16(p)); }

// Shifts each 16-bit lane left by S bits (right by -S when S < 0). Callers
// mask the bytes afterwards, so bits crossing between the two bytes of a
// lane do not matter.
template <int S>
inline __m256i shift16(__m256i v) {
    if constexpr (S > 0) return _mm256_slli_epi16(v, S);
    else if constexpr (S < 0) return _mm256_srli_epi16(v, -S);
    else return v;
}

// The 32 nibbles of 16 bytes as bytes: low nibbles first, then high ones
// (the order of Q4_0 / Q4_1 blocks).
inline __m256i nibbles_16(const void* p) {
    const __m128i q = loadu_128(p);
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

// Byte i is 0xff where bit i of `bits` is set, else 0: each 128-bit lane
// spreads its copy of the 4 bytes 8 lanes each, then tests one bit per lane.
inline __m256i bit_mask_32(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(bits)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

inline float hsum_256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace vllm::kernels
