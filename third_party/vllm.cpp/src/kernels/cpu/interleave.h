// The interleaved weight layout (WeightLayout::kInterleaved16): rows taken
// 16 at a time and stored block by block, so a SIMD register holds the same
// elements of 16 rows and a dot product yields 16 outputs at once. One
// accumulator per token and row group then gathers a whole 32-element
// block (8 VNNI dot products) before its one float conversion and scaling,
// where the row-at-a-time kernels convert and scale every dot product.
//
// Per 16-row group and 32-element block, in as many bytes as the 16 rows'
// blocks take in the file (so a group of rows keeps its byte offset):
//   Q4_1 (320 bytes): d[16], m[16]: the rows' fp16 scales and mins, row r
//        in lane r; then 4 runs of 64 bytes: run j holds, for row r, bytes
//        4j..4j+3 of that row's block: elements 4j..4j+3 in the low
//        nibbles, 16 + 4j..16 + 4j + 3 in the high ones.
//   Q4_0 (288 bytes): d[16]; then the 4 runs of 64 bytes as in Q4_1.
//   Q8_0 (544 bytes): d[16]; then 8 runs of 64 bytes: run j holds, for row
//        r, elements 4j..4j+3 plus 128 (u8, for the unsigned x signed dot
//        products; the kernels take 128 * sum(x) back out).
//
// The float types have no blocks: per 16-row group, 64 bytes per pair of
// columns (2p, 2p + 1), so they too keep 16 * row_bytes per group (and
// need an even column count):
//   BF16: row r's elements 2p, 2p + 1 in bytes 4r..4r + 3, so 32-bit lane
//         r holds the pair vdpbf16ps multiplies with a broadcast pair of
//         activations (and a shift or mask widens either to float).
//   F16:  rows 0..15 of column 2p, then rows 0..15 of column 2p + 1, each
//         half one vcvtph2ps to 16 floats.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace vllm::kernels {

constexpr int64_t kInterleaveRows = 16;
constexpr size_t kQ4_0GroupBlockBytes = 288;
constexpr size_t kQ4_1GroupBlockBytes = 320;
constexpr size_t kQ8_0GroupBlockBytes = 544;
// Where a group block's runs of weights start (after d, or d and m).
constexpr size_t kQ4_0GroupRunsOffset = 32;
constexpr size_t kQ4_1GroupRunsOffset = 64;
constexpr size_t kQ8_0GroupRunsOffset = 32;
// A pair of columns of a float group (BF16, F16).
constexpr size_t kFloatGroupPairBytes = 64;

// Whether `w` (in the file's row layout) has an interleaved form: Q4_0,
// Q4_1, Q8_0, BF16 or F16 (even column counts) with a multiple of 16 rows.
bool can_interleave(const QuantMatrix& w);

// `w` rewritten in the interleaved layout into `storage` (resized; the
// returned matrix points into it, 64-byte aligned). Requires can_interleave(w).
QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage);

}  // namespace vllm::kernels
