// The interleaved weight layout (WeightLayout::kInterleaved16): rows taken
// 16 at a time and stored block by block, so a SIMD register holds the same
// element of 16 rows and a dot product yields 16 outputs at once. One
// accumulator per token and row group then gathers a whole 32-element
// block (8 VNNI dot products) before its one float conversion and scaling,
// where the row-at-a-time kernels convert and scale every dot product.
//
// Q4_1, per 16-row group and 32-element block (320 bytes, the size of the
// 16 rows' blocks in the file, so a group of rows keeps its byte offset):
//   d[16], m[16]  the rows' fp16 scales and mins, row r in lane r;
//   qs[4][16][4]  run j holds, for row r, bytes 4j..4j+3 of that row's
//                 block: elements 4j..4j+3 in the low nibbles and
//                 16 + 4j..16 + 4j + 3 in the high ones.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace vllm::kernels {

constexpr int64_t kInterleaveRows = 16;
constexpr size_t kQ4_1GroupBlockBytes = 320;
constexpr size_t kQ4_1GroupScalesBytes = 64;  // d and m, before the qs runs

// Whether `w` (in the file's row layout) has an interleaved form.
bool can_interleave(const QuantMatrix& w);

// `w` rewritten in the interleaved layout into `storage` (resized; the
// returned matrix points into it, 64-byte aligned). Requires can_interleave(w).
QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage);

}  // namespace vllm::kernels
