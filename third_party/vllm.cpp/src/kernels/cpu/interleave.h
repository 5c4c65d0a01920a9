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

// Whether `w` (in the file's row layout) has an interleaved form.
bool can_interleave(const QuantMatrix& w);

// `w` rewritten in the interleaved layout into `storage` (resized; the
// returned matrix points into it, 64-byte aligned). Requires can_interleave(w).
QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage);

}  // namespace vllm::kernels
