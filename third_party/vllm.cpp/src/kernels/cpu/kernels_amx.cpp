// The "amx" build: the AVX-512 build with interleaved BF16 matmuls on AMX
// tiles (compiled with -mamx-tile -mamx-bf16 on top of the AVX-512 BF16
// flags, see CMakeLists.txt). Only called on CPUs (and kernels) that let
// this process use AMX (x86_features().amx_bf16).
//
// tdpbf16ps multiplies a tile of 16 tokens x 32 activations (bf16, as the
// AVX-512 BF16 kernel rounds them) by a tile of 32 columns x 16 weight
// rows, accumulating 16 x 16 float sums: 8,192 products an instruction,
// where vdpbf16ps does 32. A column pair of an interleaved BF16 group
// (interleave.h: 64 bytes, row r's two weights in 32-bit lane r) is
// exactly a row of the weight tile, so 16 pairs (1 KiB, contiguous) load
// as one tile.
//
// Every token takes this path whatever the batch, one token included:
// tdpbf16ps does not round as a chain of vdpbf16ps does (the sums differ
// in the last bits), so mixing the two by batch size would make a token's
// result depend on its batch. A sum is always one chain over the 32-column
// steps in order, then over the pairs past the last whole step (columns
// not a multiple of 32) with vdpbf16ps, for every tile shape.
#include <vector>

#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_interleaved.h"

namespace vllm::kernels {

namespace {

constexpr int kTileTokens = 16;
constexpr int kStepColumns = 32;  // a weight tile's columns: 16 pairs
constexpr int64_t kStepBytes = kStepColumns / 2 * kFloatGroupPairBytes;

// The tile registers' shapes (LDTILECFG's 64-byte operand, palette 1):
// C tiles 0-3 hold sums (tokens x 16 floats), A tiles 4-5 activations
// (tokens x 32 bf16), B tiles 6-7 weights (16 pairs x 16 rows).
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};

    explicit TileConfig(int tokens) {
        for (int i = 0; i < 6; ++i) {
            bytes_per_row[i] = 64;
            rows[i] = static_cast<uint8_t>(tokens);
        }
        for (int i = 6; i < 8; ++i) {
            bytes_per_row[i] = 64;
            rows[i] = kStepColumns / 2;
        }
    }
};

// The configuration for tiles of `tokens` (1-16) tokens: built once, in
// static storage: a configuration on the stack, which the compiler sees
// no ordinary read of, may be left unwritten (the cause given for
// llama.cpp's AMX crashes in ggml-org/llama.cpp#26954).
const TileConfig& tile_config(int tokens) {
    static const auto configs = [] {
        std::vector<TileConfig> all;
        for (int n = 1; n <= kTileTokens; ++n) all.emplace_back(n);
        return all;
    }();
    return configs[tokens - 1];
}

// One row group's sums for the tokens of a C tile, on from the stored
// tile: the pairs past the last whole step, with vdpbf16ps.
void finish_tail_pairs(const uint8_t* group, const GemmArgs& g, int64_t t0, int tokens, float* y) {
    const int64_t first_pair = g.cols / kStepColumns * (kStepColumns / 2);
    for (int t = 0; t < tokens; ++t) {
        const auto* x = reinterpret_cast<const uint16_t*>(g.x + (t0 + t) * g.x_stride);
        __m512 acc = _mm512_loadu_ps(y + t * g.y_stride);
        for (int64_t p = first_pair; p < g.cols / 2; ++p) {
            const __m512bh w = (__m512bh)_mm512_loadu_si512(group + p * kFloatGroupPairBytes);
            acc = _mm512_dpbf16_ps(acc, w, (__m512bh)_mm512_set1_epi32(load_i32(x + 2 * p)));
        }
        _mm512_storeu_ps(y + t * g.y_stride, acc);
    }
}

// Sums for one or two row groups (from row r, the second 16 rows on) and
// one or two tiles of `tokens` tokens from t0 (the second tile's first
// token 16 on), in whichever tile configuration is loaded. The tile
// register numbers are spelled out: GCC's AMX intrinsics paste them into
// the instruction text.
void amx_block(int64_t r, const GemmArgs& g, int64_t t0, int tokens, bool two_token_tiles, bool two_groups,
               bool prefetch) {
    const int64_t group_bytes = kInterleaveRows * static_cast<int64_t>(g.w_stride);
    const uint8_t* group = g.w + r / kInterleaveRows * group_bytes;
    const uint8_t* x0 = g.x + t0 * g.x_stride;
    const uint8_t* x1 = x0 + kTileTokens * g.x_stride;
    const int64_t steps = g.cols / kStepColumns;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t s = 0; s < steps; ++s) {
        const uint8_t* w0 = group + s * kStepBytes;
        if (prefetch) {
            prefetch_span(w0, kInterleavedPrefetchBytes, kStepBytes);
            if (two_groups) prefetch_span(w0, group_bytes + kInterleavedPrefetchBytes, kStepBytes);
        }
        _tile_loadd(4, x0 + s * kStepColumns * 2, static_cast<long>(g.x_stride));
        _tile_loadd(6, w0, kFloatGroupPairBytes);
        _tile_dpbf16ps(0, 4, 6);
        if (two_groups) {
            _tile_loadd(7, w0 + group_bytes, kFloatGroupPairBytes);
            _tile_dpbf16ps(1, 4, 7);
        }
        if (two_token_tiles) {
            _tile_loadd(5, x1 + s * kStepColumns * 2, static_cast<long>(g.x_stride));
            _tile_dpbf16ps(2, 5, 6);
            if (two_groups) _tile_dpbf16ps(3, 5, 7);
        }
    }
    float* y = g.y + t0 * g.y_stride + r;
    const long y_row_bytes = static_cast<long>(g.y_stride * sizeof(float));
    const bool tail = g.cols % kStepColumns != 0;
    _tile_stored(0, y, y_row_bytes);
    if (tail) finish_tail_pairs(group, g, t0, tokens, y);
    if (two_groups) {
        _tile_stored(1, y + kInterleaveRows, y_row_bytes);
        if (tail) finish_tail_pairs(group + group_bytes, g, t0, tokens, y + kInterleaveRows);
    }
    if (two_token_tiles) {
        float* y1 = y + kTileTokens * g.y_stride;
        _tile_stored(2, y1, y_row_bytes);
        if (tail) finish_tail_pairs(group, g, t0 + kTileTokens, kTileTokens, y1);
        if (two_groups) {
            _tile_stored(3, y1 + kInterleaveRows, y_row_bytes);
            if (tail) finish_tail_pairs(group + group_bytes, g, t0 + kTileTokens, kTileTokens, y1 + kInterleaveRows);
        }
    }
}

// Rows two groups at a time (one for an odd last group), tokens two full
// tiles at a time, then one full tile, then the rest in a tile of their
// own configuration.
void gemm_amx_bf16(const GemmArgs& g) {
    const int64_t tokens = g.tok_end - g.tok_begin;
    const int64_t full_end = g.tok_begin + tokens / kTileTokens * kTileTokens;
    const int rest = static_cast<int>(tokens % kTileTokens);
    const auto each_row_pair = [&](int64_t t0, int n, bool two_token_tiles) {
        for (int64_t r = g.row_begin; r < g.row_end; r += 2 * kInterleaveRows)
            amx_block(r, g, t0, n, two_token_tiles, r + kInterleaveRows < g.row_end, t0 == g.tok_begin);
    };
    if (full_end > g.tok_begin) {
        _tile_loadconfig(&tile_config(kTileTokens));
        int64_t t = g.tok_begin;
        for (; t + 2 * kTileTokens <= full_end; t += 2 * kTileTokens) each_row_pair(t, kTileTokens, true);
        if (t < full_end) each_row_pair(t, kTileTokens, false);
    }
    if (rest > 0) {
        _tile_loadconfig(&tile_config(rest));
        each_row_pair(full_end, rest, false);
    }
    _tile_release();
}

}  // namespace

const IsaKernels& amx_kernels() {
    static const IsaKernels k = [] {
        IsaKernels t = avx512_kernels();
        t.name = "amx";
        t.gemm_interleaved[kSlotBF16] = gemm_amx_bf16;
        return t;
    }();
    return k;
}

}  // namespace vllm::kernels
