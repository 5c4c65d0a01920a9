// The matmul over interleaved Q4_1 weights (interleave.h), written once
// against a vector layer V whose I holds 16 int32 lanes and F 16 floats:
// lane r of every vector belongs to row r of the 16-row group.
//
// Per block and token, 8 dot products (4 runs x low/high nibbles, each
// against 4 activation bytes broadcast to all lanes) fill one int32 sum
// per row, converted and scaled once: acc += sum * (d * dx) + m * s. A
// tile takes kT tokens, so each run's unpacked nibbles serve kT tokens.
// A token's arithmetic is the same whatever tile it lands in, so results
// do not depend on how many tokens share the batch.
//
// Include only from *_avx2.cpp / *_avx512.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <utility>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/interleave.h"
#include "kernels/cpu/isa.h"

namespace vllm::kernels {
namespace {

template <class V, int T>
void q4_1_interleaved_tile(const uint8_t* group, const GemmArgs& g, int64_t t0, float* y) {
    using I = typename V::I;
    using F = typename V::F;
    Q8x32Row x[T];
    for (int t = 0; t < T; ++t) x[t] = q8x32_row(g.x + (t0 + t) * g.x_stride, g.cols);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::set1(0.0f);
    const I nibble = V::set1_8(0x0f);

    for (int64_t b = 0; b < g.cols / kQK; ++b) {
        const uint8_t* block = group + b * kQ4_1GroupBlockBytes;
        I sum[T];
        for (int t = 0; t < T; ++t) sum[t] = V::zero();
        for (int j = 0; j < 4; ++j) {
            const I q = V::load(block + kQ4_1GroupScalesBytes + 64 * j);
            const I lo = V::and_(q, nibble);
            const I hi = V::and_(V::template srl16<4>(q), nibble);
            for (int t = 0; t < T; ++t) {
                const int8_t* xq = x[t].qs + b * kQK + 4 * j;
                sum[t] = V::dot_u8(sum[t], lo, V::bcast32(xq));
                sum[t] = V::dot_u8(sum[t], hi, V::bcast32(xq + 16));
            }
        }
        const F d = V::load_f16(reinterpret_cast<const uint16_t*>(block));
        const F m = V::load_f16(reinterpret_cast<const uint16_t*>(block) + kInterleaveRows);
        for (int t = 0; t < T; ++t) {
            acc[t] = V::fma_f(V::cvt(sum[t]), V::mul(d, V::set1(x[t].d[b])), acc[t]);
            acc[t] = V::fma_f(m, V::set1(x[t].s[b]), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) V::store_f32(y + t * g.y_stride, acc[t]);
}

// The tile for n (1..kT) tokens.
template <class V, int... Ts>
auto q4_1_interleaved_tile_for(int n, std::integer_sequence<int, Ts...>) {
    using Fn = void (*)(const uint8_t*, const GemmArgs&, int64_t, float*);
    static constexpr Fn fns[] = {&q4_1_interleaved_tile<V, Ts + 1>...};
    return fns[n - 1];
}

// GemmFn over interleaved Q4_1: row_begin and row_end are multiples of 16.
template <class V>
void gemm_q4_1_interleaved(const GemmArgs& g) {
    constexpr int kT = V::kInterleavedTokens;
    for (int64_t r = g.row_begin; r < g.row_end; r += kInterleaveRows) {
        const uint8_t* group = g.w + r * g.w_stride;  // 16 rows take 16 row strides in either layout
        for (int64_t t = g.tok_begin; t < g.tok_end; t += kT) {
            const int n = static_cast<int>(g.tok_end - t < kT ? g.tok_end - t : kT);
            q4_1_interleaved_tile_for<V>(n, std::make_integer_sequence<int, kT>{})(group, g, t, g.y + t * g.y_stride + r);
        }
    }
}

}  // namespace
}  // namespace vllm::kernels
