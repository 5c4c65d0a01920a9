// The SIMD matmul, written once against a vector layer V (simd_avx2.h,
// simd_avx512.h) and the weight formats of simd_formats.h:
//
// - tiles: R weight rows x T tokens at a time, so each step's decoded
//   weights (the expensive part: nibble unpacking, scale conversion) are
//   reused for T tokens and each activation load for R rows;
// - gemm: walks a block of rows x tokens in such tiles (edge tiles are
//   smaller instantiations of the same code), decoding each row tile once
//   into a panel when it meets many tokens.
//
// Include only from *_avx2.cpp / *_avx512.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/simd_formats.h"

namespace vllm::kernels {
namespace {

struct Tile {
    const uint8_t* x;  // first activation row
    size_t x_stride;
    int64_t cols;
    float* y;  // y for the first (token, row)
    int64_t y_stride;
};

template <class Fn, int... S>
inline void for_each_step(Fn&& fn, std::integer_sequence<int, S...>) {
    (fn(std::integral_constant<int, S>{}), ...);
}

// Weight rows are read R at a time, in lockstep: R interleaved streams that
// the hardware prefetchers follow poorly (a GEMV over a Q8_0 matrix in DRAM
// ran at a third of the speed of reading one row at a time). So direct
// reads prefetch, into L2, the same bytes kPrefetchTiles row tiles on.
constexpr int64_t kPrefetchTiles = 8;

// One step of a super-block format's decoded weights and scales.
template <class V>
struct KStep {
    typename V::I q, sc;
};

// --- where a tile's decoded weights come from ----------------------------------
// flat(r, s): step s of row r (flat formats); row(r, sb, storage) and
// step<S>(row, r, sb): a super-block's scales and its step S (super-block
// formats);
// raw(r): row r as stored; with kSeparateMins, row_mins(r): a kMins
// format's min factor per 32-element block, zero-padded to
// blocks32_padded16(cols).

struct TileRows {
    const uint8_t* w;  // first row
    size_t stride;
    int64_t cols;

    const uint8_t* raw(int r) const { return w + r * stride; }
};

// Decoding the R rows as the tile goes: for token blocks too small to
// reuse decoded weights.
template <class V, class Fmt, int R>
struct DirectWeights : TileRows {
    static constexpr bool kSeparateMins = false;
    auto flat(int r, int64_t s) const {
        prefetch_span(w, (r + kPrefetchTiles * R) * stride + s * Fmt::kStepBytes, Fmt::kStepBytes);
        return Fmt::load_w(raw(r), s, cols);
    }
    template <class Row>
    [[gnu::always_inline]] const Row& row(int r, int64_t sb, Row& storage) const {
        using Block = typename Fmt::Block;
        prefetch_span(w, (r + kPrefetchTiles * R) * stride + sb * sizeof(Block), sizeof(Block));
        Fmt::row(raw(r), sb, storage);
        return storage;
    }
    template <int S, class Row>
    KStep<V> step(const Row& row, int /*r*/, int64_t /*sb*/) const {
        return {Fmt::template weights<S>(row), V::template spread16<Fmt::kScalesPerStep, S * Fmt::kScalesPerStep>(row.scales)};
    }
};

// Decoding as the tile goes for the super-block formats with mins (Q4_K,
// Q5_K), with the min term kept apart and added after the dot products, as
// a panel does: each row's mins go to `mins` as its super-blocks are
// decoded, so a few tokens (batch-1 decode, an expert's few tokens) skip
// writing and rereading a panel and still get the panel path's arithmetic
// (batch invariance).
template <class V, class Fmt, int R>
struct DirectMinsWeights : DirectWeights<V, Fmt, R> {
    static constexpr bool kSeparateMins = true;
    float* mins;  // [R][blocks32_padded16(cols)], the pads zero

    template <class Row>
    [[gnu::always_inline]] const Row& row(int r, int64_t sb, Row& storage) const {
        DirectWeights<V, Fmt, R>::row(r, sb, storage);
        k4_k5_mins(storage.b, mins + r * blocks32_padded16(this->cols) + sb * 8);
        return storage;
    }
    const float* row_mins(int r) const { return mins + r * blocks32_padded16(this->cols); }

    static size_t bytes(int64_t cols) { return R * blocks32_padded16(cols) * sizeof(float); }
    // The pads past the row's blocks, zeroed once per buffer.
    static void zero_pads(float* mins, int64_t cols) {
        const int64_t n16 = blocks32_padded16(cols);
        for (int r = 0; r < R; ++r)
            for (int64_t i = cols / 32; i < n16; ++i) mins[r * n16 + i] = 0.0f;
    }
};

// The R rows decoded once into a panel (the calling thread's scratch), for
// tiles of many tokens: decoding (nibble unpacking, scale conversion) is
// then paid once per row tile instead of once per token tile. Layout:
// flat: W[steps][R]; super-block: Row[sbs][R], then KStep[sbs][4][R];
// then for kMins formats float mins[R][nb16].
template <class V, class Fmt, int R>
struct PanelWeights : TileRows {
    static constexpr int kSteps = kQKK / 64;  // per super-block
    static constexpr bool kSeparateMins = true;
    const uint8_t* data;

    static size_t rows_bytes(int64_t cols) {
        return round_up_64(static_cast<size_t>(cols / kQKK) * R * sizeof(typename Fmt::Row));
    }
    // Bytes before the mins.
    static size_t mins_offset(int64_t cols) {
        if constexpr (Fmt::kSuperBlock) return rows_bytes(cols) + static_cast<size_t>(cols / kQKK) * kSteps * R * sizeof(KStep<V>);
        else return static_cast<size_t>(Fmt::steps(cols)) * R * sizeof(typename Fmt::W);
    }
    static size_t bytes(int64_t cols) {
        return mins_offset(cols) + (Fmt::kMins ? R * blocks32_padded16(cols) * sizeof(float) : 0);
    }
    static void fill(uint8_t* data, const DirectWeights<V, Fmt, R>& src, int64_t cols) {
        const int64_t n16 = blocks32_padded16(cols);
        auto* mins = reinterpret_cast<float*>(data + mins_offset(cols));
        if constexpr (Fmt::kSuperBlock) {
            auto* rows = reinterpret_cast<typename Fmt::Row*>(data);
            auto* steps = reinterpret_cast<KStep<V>*>(data + rows_bytes(cols));
            for (int64_t sb = 0; sb < cols / kQKK; ++sb)
                for (int r = 0; r < R; ++r) {
                    const typename Fmt::Row& row = src.row(r, sb, rows[sb * R + r]);
                    for_each_step([&](auto step) {
                        constexpr int S = decltype(step)::value;
                        steps[(sb * kSteps + S) * R + r] = src.template step<S>(row, r, sb);
                    }, std::make_integer_sequence<int, kSteps>{});
                    if constexpr (Fmt::kMins) k4_k5_mins(row.b, mins + r * n16 + sb * 8);
                }
        } else {
            auto* w = reinterpret_cast<typename Fmt::W*>(data);
            for (int64_t s = 0; s < Fmt::steps(cols); ++s)
                for (int r = 0; r < R; ++r) w[s * R + r] = src.flat(r, s);
            // W::m holds blocks 2s and 2s + 1 in lanes 0 and 8. (With an odd
            // block count, the duplicate of the last block lands in a pad
            // slot, where the activations' s is 0.)
            if constexpr (Fmt::kMins)
                for (int r = 0; r < R; ++r)
                    for (int64_t s = 0; s < Fmt::steps(cols); ++s) V::store_pair(mins + r * n16 + 2 * s, w[s * R + r].m);
        }
        if constexpr (Fmt::kMins) {
            int64_t filled = cols / 32;
            if constexpr (!Fmt::kSuperBlock) filled = 2 * Fmt::steps(cols);
            for (int r = 0; r < R; ++r)
                for (int64_t i = filled; i < n16; ++i) mins[r * n16 + i] = 0.0f;
        }
    }

    const float* row_mins(int r) const {
        return reinterpret_cast<const float*>(data + mins_offset(cols)) + r * blocks32_padded16(cols);
    }
    const auto& flat(int r, int64_t s) const { return reinterpret_cast<const typename Fmt::W*>(data)[s * R + r]; }
    template <class Row>
    const Row& row(int r, int64_t sb, Row& /*storage*/) const {
        return reinterpret_cast<const Row*>(data)[sb * R + r];
    }
    template <int S, class Row>
    const KStep<V>& step(const Row& /*row*/, int r, int64_t sb) const {
        return reinterpret_cast<const KStep<V>*>(data + rows_bytes(cols))[(sb * kSteps + S) * R + r];
    }
};

// The calling thread's panel memory, kept between calls, 64-byte aligned.
inline uint8_t* panel_buffer(size_t bytes) {
    struct Buffer {
        uint8_t* data = nullptr;
        size_t size = 0;
        ~Buffer() { delete[] data; }
    };
    thread_local Buffer buffer;
    if (buffer.size < bytes) {
        delete[] buffer.data;
        buffer.data = new uint8_t[bytes + 64];
        buffer.size = bytes;
    }
    const auto address = reinterpret_cast<uintptr_t>(buffer.data);
    return buffer.data + (64 - address % 64) % 64;
}

// --- tiles: R rows x T tokens ---------------------------------------------------

// The min term of kMins formats over panels: sum_b m_b s_b, 16 blocks at a
// time, into the accumulators (whose lanes are summed at the end anyway).
template <class V, int R, int T, class Weights, class XRow>
void add_mins(typename V::Acc (&acc)[R][T], const Weights& weights, const XRow (&x)[T], int64_t cols) {
    for (int64_t b = 0; b < blocks32_padded16(cols); b += 16)
        for (int t = 0; t < T; ++t) {
            const typename V::F s = V::load_f32(x[t].s + b);
            for (int r = 0; r < R; ++r) acc[r][t] = V::fma(V::load_f32(weights.row_mins(r) + b), s, acc[r][t]);
        }
}

template <class V, class Fmt, int R, int T, class Weights>
void tile_flat(const Tile& a, const Weights& weights) {
    constexpr bool kSeparateMins = Fmt::kMins && Weights::kSeparateMins;
    typename Fmt::XRow x[T];
    for (int t = 0; t < T; ++t) x[t] = Fmt::x_row(a.x + t * a.x_stride, a.cols);
    typename V::Acc acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = V::acc_zero();

    const int64_t steps = Fmt::steps(a.cols);
    for (int64_t s = 0; s < steps; ++s) {
        typename Fmt::W w[R];
        for (int r = 0; r < R; ++r) w[r] = weights.flat(r, s);
        for (int t = 0; t < T; ++t) {
            const typename Fmt::X xs = Fmt::load_x(x[t], s);
            for (int r = 0; r < R; ++r) {
                if constexpr (kSeparateMins) Fmt::madd_without_min(acc[r][t], w[r], xs);
                else Fmt::madd(acc[r][t], w[r], xs);
            }
        }
    }
    if constexpr (kSeparateMins) add_mins<V>(acc, weights, x, a.cols);
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) a.y[t * a.y_stride + r] = V::hsum(acc[r][t]) + Fmt::tail(weights.raw(r), x[t], a.cols);
}

template <class V, class Fmt, int R, int T, class Weights>
void tile_superblock(const Tile& a, const Weights& weights) {
    constexpr bool kSeparateMins = Fmt::kMins && Weights::kSeparateMins;
    using I = typename V::I;
    Q8x256Row x[T];
    for (int t = 0; t < T; ++t) x[t] = q8x256_row(a.x + t * a.x_stride, a.cols);
    typename V::Acc acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = V::acc_zero();

    for (int64_t sb = 0; sb < a.cols / kQKK; ++sb) {
        // Scales read in place from a panel (copying them costs), decoded
        // into `storage` otherwise.
        typename Fmt::Row storage[R];
        const typename Fmt::Row* rows[R];
        for (int r = 0; r < R; ++r) rows[r] = &weights.row(r, sb, storage[r]);
        I isum[R][T];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) isum[r][t] = V::zero();

        for_each_step(
            [&](auto step) {
                constexpr int S = decltype(step)::value;
                KStep<V> k[R];
                for (int r = 0; r < R; ++r) k[r] = weights.template step<S>(*rows[r], r, sb);
                for (int t = 0; t < T; ++t) {
                    const I xq = V::load(x[t].qs + sb * kQKK + 64 * S);
                    for (int r = 0; r < R; ++r) isum[r][t] = V::madd_u8_i16(isum[r][t], k[r].q, xq, k[r].sc);
                }
            },
            std::make_integer_sequence<int, kQKK / 64>{});

        for (int t = 0; t < T; ++t) {
            const I bsums = V::load_half(x[t].bsums + sb * 16);
            const typename V::F dx = V::set1(x[t].d[sb]);
            for (int r = 0; r < R; ++r) {
                if constexpr (Fmt::kMins || Fmt::kGroupMins) {
                    acc[r][t] = V::fma(V::cvt(isum[r][t]), V::mul(rows[r]->d, dx), acc[r][t]);
                    if constexpr (!kSeparateMins) {
                        const I mins = V::madd_i16(V::zero(), bsums, rows[r]->corr);
                        acc[r][t] = V::fma(V::cvt(mins), V::mul(rows[r]->dmin, dx), acc[r][t]);
                    }
                } else {
                    const I total = V::madd_i16(isum[r][t], bsums, rows[r]->corr);
                    acc[r][t] = V::fma(V::cvt(total), V::mul(rows[r]->d, dx), acc[r][t]);
                }
            }
        }
    }
    if constexpr (kSeparateMins) add_mins<V>(acc, weights, x, a.cols);
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) a.y[t * a.y_stride + r] = V::hsum(acc[r][t]);
}

// --- gemm: a block of rows x tokens in tiles ---------------------------------------

template <class V, class Fmt>
struct Gemm {
    static constexpr int kR = V::kTileRows;
    static constexpr int kT = V::kTileTokens;

    template <int R, int T, class Weights>
    static void tile(const Tile& a, const Weights& w) {
        if constexpr (Fmt::kSuperBlock) tile_superblock<V, Fmt, R, T>(a, w);
        else tile_flat<V, Fmt, R, T>(a, w);
    }

    // The R-row tile for n (1..kT) tokens.
    template <int R, class Weights, int... Ts>
    static auto tile_for(int n, std::integer_sequence<int, Ts...>) {
        using Fn = void (*)(const Tile&, const Weights&);
        static constexpr Fn fns[] = {&tile<R, Ts + 1, Weights>...};
        return fns[n - 1];
    }

    template <int R, class Weights>
    static void token_tiles(const GemmArgs& g, int64_t r, const Weights& w) {
        Tile a{nullptr, g.x_stride, g.cols, nullptr, g.y_stride};
        for (int64_t t = g.tok_begin; t < g.tok_end; t += kT) {
            const int n = static_cast<int>(g.tok_end - t < kT ? g.tok_end - t : kT);
            a.x = g.x + t * g.x_stride;
            a.y = g.y + t * g.y_stride + r;
            tile_for<R, Weights>(n, std::make_integer_sequence<int, kT>{})(a, w);
        }
    }

    // Super-block formats with mins take DirectMinsWeights for a few tokens.
    static constexpr bool kDirectMins = Fmt::kMins && Fmt::kSuperBlock;

    template <int R>
    static void row_tile(const GemmArgs& g, int64_t r, uint8_t* panel, float* direct_mins) {
        const DirectWeights<V, Fmt, R> direct{{g.w + r * g.w_stride, g.w_stride, g.cols}};
        if constexpr (kDirectMins) {
            if (direct_mins) {
                DirectMinsWeights<V, Fmt, R> weights{direct};
                weights.mins = direct_mins;
                token_tiles<R>(g, r, weights);
                return;
            }
        }
        if (panel) {
            PanelWeights<V, Fmt, R>::fill(panel, direct, g.cols);
            token_tiles<R>(g, r, PanelWeights<V, Fmt, R>{direct, panel});
        } else {
            token_tiles<R>(g, r, direct);
        }
    }

    static void run(const GemmArgs& g) {
        // A panel pays off once a row tile meets more than one token tile.
        // kMins formats always use one: the panel adds that term after the
        // dot product, the direct path inside it, and a token's result must
        // not depend on how many tokens share its batch (batch invariance:
        // a request's output is the same alone or batched). For the others
        // (Q2_K's group mins included) both paths do the same arithmetic.
        // (Q4_K and Q5_K with one token tile: DirectMinsWeights, the same
        // arithmetic without the panel.)
        const bool many = g.tok_end - g.tok_begin > kT;
        float* direct_mins = nullptr;
        if (kDirectMins && !many) {
            direct_mins = reinterpret_cast<float*>(panel_buffer(DirectMinsWeights<V, Fmt, kR>::bytes(g.cols)));
            DirectMinsWeights<V, Fmt, kR>::zero_pads(direct_mins, g.cols);
        }
        uint8_t* panel = (Fmt::kMins && !direct_mins) || many
                             ? panel_buffer(PanelWeights<V, Fmt, kR>::bytes(g.cols))
                             : nullptr;
        // The rows past the last whole tile go one at a time, through the
        // panel too for kMins formats: a row's result then does not depend
        // on which tile it falls in (matvec_rows may start anywhere).
        int64_t r = g.row_begin;
        for (; r + kR <= g.row_end; r += kR) row_tile<kR>(g, r, panel, direct_mins);
        for (; r < g.row_end; ++r) row_tile<1>(g, r, Fmt::kMins ? panel : nullptr, direct_mins);
    }
};

}  // namespace
}  // namespace vllm::kernels
