// BF16 weights on AVX-512 BF16 (compiled with -mavx512bf16 on top of the
// AVX-512 flags, see CMakeLists.txt): vdpbf16ps multiplies the weights as
// stored by activations split into two bf16 halves (act_layout.h, BF16x2),
// 32 elements an instruction, where the float path widens every weight to
// float first. Only called after avx512_kernels() has checked the CPU.
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_gemm.h"

namespace vllm::kernels {

namespace {

// hi = bf16(x), lo = bf16(x - hi) for 32 floats (rest: how many of them are
// real, the others read as zero).
void split_32(const float* x, int rest, uint16_t* hi, uint16_t* lo) {
    const __mmask16 first = rest >= 16 ? 0xffff : static_cast<__mmask16>((1u << rest) - 1);
    const __mmask16 second = rest >= 32 ? 0xffff : rest <= 16 ? 0 : static_cast<__mmask16>((1u << (rest - 16)) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(first, x);
    const __m512 b = _mm512_maskz_loadu_ps(second, x + 16);
    const __m512bh h = _mm512_cvtne2ps_pbh(b, a);
    const __m512i hbits = (__m512i)h;
    // The halves back as floats: bf16 i of h holds element i.
    const __m512 ha = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hbits)), 16));
    const __m512 hb =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hbits, 1)), 16));
    const __m512bh l = _mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha));
    _mm512_storeu_si512(hi, hbits);
    _mm512_storeu_si512(lo, (__m512i)l);
}

void quantize_bf16x2(const float* x, int64_t n, uint8_t* out) {
    const Bf16x2Row row = bf16x2_row(out, n);
    auto* hi = const_cast<uint16_t*>(row.hi);
    auto* lo = const_cast<uint16_t*>(row.lo);
    for (int64_t i = 0; i < n; i += 32) split_32(x + i, static_cast<int>(n - i), hi + i, lo + i);
}

// A step is 32 elements: one register of weights, the activations' two
// halves, two vdpbf16ps (each adds 2 products per float lane).
struct Bf16PairsFormat {
    static constexpr bool kSuperBlock = false;
    static constexpr bool kMins = false;
    static constexpr int kStep = 32;
    static constexpr int64_t kStepBytes = kStep * sizeof(uint16_t);
    using XRow = Bf16x2Row;
    using W = __m512bh;
    struct X {
        __m512bh hi, lo;
    };

    static XRow x_row(const uint8_t* p, int64_t cols) { return bf16x2_row(p, cols); }
    static int64_t steps(int64_t cols) { return cols / kStep; }
    static __m512bh load_bh(const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
    static W load_w(const uint8_t* row, int64_t step, int64_t /*cols*/) {
        return load_bh(reinterpret_cast<const uint16_t*>(row) + step * kStep);
    }
    static X load_x(const XRow& x, int64_t step) { return {load_bh(x.hi + step * kStep), load_bh(x.lo + step * kStep)}; }
    static void madd(__m512& acc, const W& w, const X& x) { acc = _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc, w, x.hi), w, x.lo); }
    // Elements past the last whole step, in float (the same products).
    static float tail(const uint8_t* row, const XRow& x, int64_t cols) {
        const auto* w = reinterpret_cast<const uint16_t*>(row);
        float sum = 0.0f;
        for (int64_t i = steps(cols) * kStep; i < cols; ++i)
            sum += bf16_to_fp32(w[i]) * bf16_to_fp32(x.hi[i]) + bf16_to_fp32(w[i]) * bf16_to_fp32(x.lo[i]);
        return sum;
    }
};

}  // namespace

void use_avx512_bf16(IsaKernels& k) {
    k.quantize_bf16x2 = quantize_bf16x2;
    k.gemm[kSlotBF16] = Gemm<Avx512, Bf16PairsFormat>::run;
}

}  // namespace vllm::kernels
