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
// bytes holds row r's two weights): per pair, one vdpbf16ps per row group
// and token, with the token's two activations broadcast to every lane. A
// tile takes G row groups x T tokens, so each broadcast serves G weight
// vectors and each weight vector T tokens: with one group a tile loaded a
// register per product, and at 32 tokens (batched decode) the loads, not
// the products, set the pace (3 x 8 ran 1.5-1.8x the speed of 1 x 8 at 16
// and 512 tokens, test_kernels --bench; 4 x 6 about as fast as 3 x 8).
// Every sum is one chain over the pairs in order, whatever the tile's
// shape, so a token's result does not depend on the batch; a lone token
// still has G independent chains (one per group) to hide their latency.
// The first tile of tokens asks for each group's bytes 2 KiB ahead, as
// the quantized tiles do (simd_interleaved.h): a decode step's BF16
// matmuls took 6% less time (bench_decode_matmuls on a Zen 4, medians of
// 8 alternating pairs).
constexpr int kBf16TileGroups = 3;
constexpr int kBf16TileTokens = 8;

template <int G>
struct Bf16PairsTiles {
    template <int T>
    static void run(const uint8_t* first_group, const GemmArgs& g, int64_t t0, float* y) {
        const int64_t group_bytes = kInterleaveRows * static_cast<int64_t>(g.w_stride);
        const uint16_t* x[T];
        for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const uint16_t*>(g.x + (t0 + t) * g.x_stride);
        __m512 acc[G][T];
        for (auto& group : acc)
            for (auto& sum : group) sum = _mm512_setzero_ps();
        const bool prefetch = t0 == g.tok_begin;
        for (int64_t c = 0; c < g.cols; c += 2) {
            __m512bh w[G];
            for (int gi = 0; gi < G; ++gi) {
                const int64_t at = gi * group_bytes + c / 2 * kFloatGroupPairBytes;
                if (prefetch) prefetch_span(first_group, at + kInterleavedPrefetchBytes, kFloatGroupPairBytes);
                w[gi] = (__m512bh)_mm512_loadu_si512(first_group + at);
            }
            for (int t = 0; t < T; ++t) {
                const __m512bh xt = (__m512bh)_mm512_set1_epi32(load_i32(x[t] + c));
                for (int gi = 0; gi < G; ++gi) acc[gi][t] = _mm512_dpbf16_ps(acc[gi][t], w[gi], xt);
            }
        }
        for (int gi = 0; gi < G; ++gi)
            for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * g.y_stride + gi * kInterleaveRows, acc[gi][t]);
    }
};

// Rows in tiles of G groups, then what is left (fewer than G groups at the
// end of the thread's range) in tiles of fewer: the pool's chunks of rows
// seldom come in multiples of 3 groups, and with one-group tiles for the
// rest they took a sixth of a 32-request run's matmul time.
template <int G>
void gemm_bf16_groups(const GemmArgs& g) {
    constexpr int64_t kTileRows = G * kInterleaveRows;
    GemmArgs tiled = g;
    tiled.row_end = g.row_begin + (g.row_end - g.row_begin) / kTileRows * kTileRows;
    gemm_interleaved_tiles<kBf16TileTokens>(
        tiled, interleaved_tiles<Bf16PairsTiles<G>>(std::make_integer_sequence<int, kBf16TileTokens>{}), kTileRows);
    if constexpr (G > 1) {
        GemmArgs rest = g;
        rest.row_begin = tiled.row_end;
        gemm_bf16_groups<G - 1>(rest);
    }
}

}  // namespace

void use_avx512_bf16(IsaKernels& k) {
    k.quantize_bf16 = quantize_bf16;
    k.gemm[kSlotBF16] = Gemm<Avx512, Bf16Format>::run;
    k.gemm_interleaved[kSlotBF16] = gemm_bf16_groups<kBf16TileGroups>;
}

}  // namespace vllm::kernels
