// The matmuls over interleaved weights (interleave.h), written once against
// a vector layer V whose I holds 16 int32 lanes and F 16 floats: lane r of
// every vector belongs to row r of the 16-row group.
//
// Per block and token, 8 dot products (each of a weight vector with 4
// activation bytes broadcast to all lanes) fill one int32 sum per row,
// converted and scaled once: acc += sum * (d * dx) + offset * s, where s
// is the activations' dx * sum(q) and offset the format's per-row term
// (Q4_0: -8 d; Q4_1: its min m; Q8_0: -128 d, taking back the +128 that
// made its weights unsigned). A tile takes kT tokens, so each weight
// vector serves kT tokens. A token's arithmetic is the same whatever tile it lands in,
// so results do not depend on how many tokens share the batch.
//
// The float formats (BF16, F16) take float activations: per pair of
// columns, the 16 rows' two weight vectors are widened to float in
// registers and each meets every token of the tile as one FMA with the
// token's activation broadcast (V::kFloatInterleavedTokens tokens a tile).
//
// Include only from the SIMD builds' kernels_*.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <utility>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/interleave.h"
#include "kernels/cpu/isa.h"

namespace vllm::kernels {
namespace {

// The 4-bit formats' weights: 4 runs from kRunsOffset, each giving the
// low nibbles (activation bytes 4j..) and the high ones (16 + 4j..).
template <class V, size_t kRunsOffset>
struct InterleavedNibbles {
    // fn(w, x_offset) for each of the block's 8 weight vectors, x_offset
    // being the first of the 4 activation bytes it meets.
    template <class Fn>
    static void for_each_weights(const uint8_t* block, Fn&& fn) {
        const typename V::I nibble = V::set1_8(0x0f);
        for (int j = 0; j < 4; ++j) {
            const typename V::I q = V::load(block + kRunsOffset + 64 * j);
            fn(V::and_(q, nibble), 4 * j);
            fn(V::and_(V::template srl16<4>(q), nibble), 16 + 4 * j);
        }
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

template <class V>
struct InterleavedQ8_0 {
    static constexpr size_t kBlockBytes = kQ8_0GroupBlockBytes;
    template <class Fn>
    static void for_each_weights(const uint8_t* block, Fn&& fn) {
        for (int j = 0; j < 8; ++j) fn(V::load(block + kQ8_0GroupRunsOffset + 64 * j), 4 * j);
    }
    static typename V::F offset(const uint8_t* /*block*/, typename V::F d) { return V::mul(d, V::set1(-128.0f)); }
};

// The two columns of a pair as floats, row r in lane r.
template <class V>
struct InterleavedF16 {
    static void pair(const uint8_t* p, typename V::F& even, typename V::F& odd) {
        const auto* h = reinterpret_cast<const uint16_t*>(p);
        even = V::load_f16(h);
        odd = V::load_f16(h + kInterleaveRows);
    }
};

template <class V>
struct InterleavedBF16 {
    static void pair(const uint8_t* p, typename V::F& even, typename V::F& odd) {
        const typename V::I v = V::load(p);
        even = V::bf16_low_halves(v);
        odd = V::bf16_high_halves(v);
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
        for (int64_t c = 0; c < g.cols; c += 2) {
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

        for (int64_t b = 0; b < g.cols / kQK; ++b) {
            const uint8_t* block = group + b * Fmt::kBlockBytes;
            I sum[T];
            for (int t = 0; t < T; ++t) sum[t] = V::zero();
            Fmt::for_each_weights(block, [&](const I& w, int x_offset) {
                for (int t = 0; t < T; ++t) sum[t] = V::dot_u8(sum[t], w, V::bcast32(x[t].qs + b * kQK + x_offset));
            });
            const F d = V::load_f16(reinterpret_cast<const uint16_t*>(block));
            const F offset = Fmt::offset(block, d);
            for (int t = 0; t < T; ++t) {
                acc[t] = V::fma_f(V::cvt(sum[t]), V::mul(d, V::set1(x[t].d[b])), acc[t]);
                acc[t] = V::fma_f(offset, V::set1(x[t].s[b]), acc[t]);
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

// GemmFn over an interleaved quantized matrix (Q8x32 activations).
template <class V, class Fmt>
void gemm_interleaved(const GemmArgs& g) {
    constexpr int kT = V::kInterleavedTokens;
    gemm_interleaved_tiles<kT>(
        g, interleaved_tiles<QuantTiles<V, Fmt>>(std::make_integer_sequence<int, kT>{}));
}

// GemmFn over an interleaved float matrix (float activations).
template <class V, class Fmt>
void gemm_interleaved_float(const GemmArgs& g) {
    constexpr int kT = V::kFloatInterleavedTokens;
    gemm_interleaved_tiles<kT>(
        g, interleaved_tiles<FloatTiles<V, Fmt>>(std::make_integer_sequence<int, kT>{}));
}

}  // namespace
}  // namespace vllm::kernels
