// BF16 weights on AVX-512 BF16 (compiled with -mavx512bf16 on top of the
// AVX-512 flags, see CMakeLists.txt): vdpbf16ps multiplies the weights as
// stored by the activations rounded to bf16 once per matmul (act_layout.h,
// ActKind::BF16), 32 products an instruction, where the float path widens
// every weight to float first. Only called after avx512_kernels() has
// checked the CPU.
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_gemm.h"
#include "kernels/cpu/simd_interleaved.h"

namespace vllm::kernels {

namespace {

// bf16(x), to nearest even, for n floats; the row's pad elements are zero.
void quantize_bf16(const float* x, int64_t n, uint8_t* out) {
    auto* dst = reinterpret_cast<uint16_t*>(out);
    for (int64_t i = 0; i < n; i += 32) {
        const int64_t rest = n - i;
        const __mmask16 first = rest >= 16 ? 0xffff : static_cast<__mmask16>((1u << rest) - 1);
        const __mmask16 second = rest >= 32 ? 0xffff : rest <= 16 ? 0 : static_cast<__mmask16>((1u << (rest - 16)) - 1);
        const __m512 a = _mm512_maskz_loadu_ps(first, x + i);
        const __m512 b = _mm512_maskz_loadu_ps(second, x + i + 16);
        _mm512_storeu_si512(dst + i, (__m512i)_mm512_cvtne2ps_pbh(b, a));
    }
}

// Row layout: a step is 32 elements, one register of weights and one of
// activations, one vdpbf16ps (2 products per float lane).
struct Bf16Format {
    static constexpr bool kSuperBlock = false;
    static constexpr bool kMins = false;
    static constexpr int kStep = 32;
    static constexpr int64_t kStepBytes = kStep * sizeof(uint16_t);
    using XRow = const uint16_t*;
    using W = __m512bh;
    using X = __m512bh;

    static XRow x_row(const uint8_t* p, int64_t /*cols*/) { return reinterpret_cast<const uint16_t*>(p); }
    static int64_t steps(int64_t cols) { return cols / kStep; }
    static __m512bh load_bh(const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
    static W load_w(const uint8_t* row, int64_t step, int64_t /*cols*/) {
        return load_bh(reinterpret_cast<const uint16_t*>(row) + step * kStep);
    }
    static X load_x(XRow x, int64_t step) { return load_bh(x + step * kStep); }
    static void madd(__m512& acc, const W& w, const X& x) { acc = _mm512_dpbf16_ps(acc, w, x); }
    // Elements past the last whole step, in float (the same products).
    static float tail(const uint8_t* row, XRow x, int64_t cols) {
        const auto* w = reinterpret_cast<const uint16_t*>(row);
        float sum = 0.0f;
        for (int64_t i = steps(cols) * kStep; i < cols; ++i) sum += bf16_to_fp32(w[i]) * bf16_to_fp32(x[i]);
        return sum;
    }
};

// Interleaved layout (interleave.h: 32-bit lane r of a column pair's 64
// bytes holds row r's two weights): per pair, one vdpbf16ps per token with
// that token's two activations broadcast to every lane. Each token keeps
// two sums (even and odd pairs), so that even a lone token (decode) has
// two independent chains of dot products; they meet at the end.
constexpr int kPairTileTokens = 8;

struct Bf16PairsTiles {
    template <int T>
    static void run(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
        const uint16_t* x[T];
        for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const uint16_t*>(g.x + (t0 + t) * g.x_stride);
        __m512 even[T], odd[T];
        for (int t = 0; t < T; ++t) even[t] = odd[t] = _mm512_setzero_ps();
        const auto pair = [&](__m512 (&acc)[T], int64_t c) {
            const __m512bh w = (__m512bh)_mm512_loadu_si512(group + c / 2 * kFloatGroupPairBytes);
            for (int t = 0; t < T; ++t) acc[t] = _mm512_dpbf16_ps(acc[t], w, (__m512bh)_mm512_set1_epi32(load_i32(x[t] + c)));
        };
        int64_t c = 0;
        for (; c + 4 <= g.cols; c += 4) {
            pair(even, c);
            pair(odd, c + 2);
        }
        if (c < g.cols) pair(even, c);
        for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * g.y_stride, _mm512_add_ps(even[t], odd[t]));
    }
};

void gemm_bf16_interleaved(const GemmArgs& g) {
    gemm_interleaved_tiles<kPairTileTokens>(
        g, interleaved_tiles<Bf16PairsTiles>(std::make_integer_sequence<int, kPairTileTokens>{}));
}

}  // namespace

void use_avx512_bf16(IsaKernels& k) {
    k.quantize_bf16 = quantize_bf16;
    k.gemm[kSlotBF16] = Gemm<Avx512, Bf16Format>::run;
    k.gemm_interleaved[kSlotBF16] = gemm_bf16_interleaved;
}

}  // namespace vllm::kernels
