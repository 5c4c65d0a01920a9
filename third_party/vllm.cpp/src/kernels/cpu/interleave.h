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
//        r, elements 4j..4j+3, in the form the build's kernel multiplies
//        (QuantMatrix::q8_0_bytes): plus 128 (u8) for the unsigned x
//        signed dot products (AVX-512 VNNI; the kernel takes 128 * sum(x)
//        back out), or as stored (s8) for the signed ones (AVX2's sign and
//        maddubs, NEON's SDOT), which would otherwise undo the 128 on every
//        weight vector.
//   Q5_0 (352 bytes) and Q5_1 (384 bytes): as Q4_0 and Q4_1 (d, or d and m,
//        then the 4 runs of nibbles), then the fifth bits as a 64-byte
//        plane: bit v of byte 4r + i is the fifth bit of row r's element
//        4v + i, so weight vector v (elements 4v..4v+3 of the 16 rows)
//        takes its 16s with one shift and mask of the plane.
//
// The K-quants keep their 256-element super-blocks, per 16-row group and
// super-block:
//   Q4_K (2304 bytes): d[16], dmin[16]; sc[8][16]: byte r of sc[j] is
//        row r's 6-bit scale of sub-block j plus, in bits 6..7, the top two
//        bits of its 6-bit min; mlo[4][16]: byte r of mlo[p] holds the low
//        4 bits of the mins of sub-blocks 2p (low nibble) and 2p + 1; then
//        per sub-block j (32 elements) the 4 runs of 64 bytes of a Q4_0
//        block (row r's elements 32j + 4k.. in the low nibbles of run k,
//        32j + 16 + 4k.. in the high ones).
//   Q5_K (2816 bytes): as Q4_K, then per sub-block j the fifth-bit plane
//        of its 4 runs, as in Q5_0.
//   Q6_K (3360 bytes): d[16]; sc[16][16]: byte r of sc[j] is row r's
//        signed scale of sub-block j (16 elements); 32 low runs of 64
//        bytes: run p holds, for row r, the low 4 bits of elements
//        4p..4p+3 (low nibbles) and 128 + 4p.. (high nibbles); 16 high
//        runs of 64 bytes: run p holds, for row r, in bits 2s..2s+1 of
//        byte i, the top 2 bits of element 64s + 4p + i.
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
constexpr size_t kQ5_0GroupBlockBytes = 352;
constexpr size_t kQ5_1GroupBlockBytes = 384;
constexpr size_t kQ4_KGroupBlockBytes = 2304;
constexpr size_t kQ5_KGroupBlockBytes = 2816;
constexpr size_t kQ6_KGroupBlockBytes = 3360;
// Where a group block's runs of weights start (after d, or d and m).
constexpr size_t kQ4_0GroupRunsOffset = 32;
constexpr size_t kQ4_1GroupRunsOffset = 64;
constexpr size_t kQ8_0GroupRunsOffset = 32;
constexpr size_t kQ5_0GroupRunsOffset = 32;
constexpr size_t kQ5_1GroupRunsOffset = 64;
// Where a Q5 group block's fifth-bit plane starts (after the runs).
constexpr size_t kQ5_0GroupPlaneOffset = kQ5_0GroupRunsOffset + 256;
constexpr size_t kQ5_1GroupPlaneOffset = kQ5_1GroupRunsOffset + 256;
// The parts of a Q4_K group super-block.
constexpr size_t kQ4_KGroupDminOffset = 32;
constexpr size_t kQ4_KGroupScalesOffset = 64;
constexpr size_t kQ4_KGroupMinsOffset = 192;
constexpr size_t kQ4_KGroupRunsOffset = 256;
// Q5_K: Q4_K's parts, then the planes.
constexpr size_t kQ5_KGroupPlaneOffset = kQ4_KGroupBlockBytes;
// The parts of a Q6_K group super-block.
constexpr size_t kQ6_KGroupScalesOffset = 32;
constexpr size_t kQ6_KGroupLowOffset = 288;
constexpr size_t kQ6_KGroupHighOffset = kQ6_KGroupLowOffset + 32 * 64;
// A pair of columns of a float group (BF16, F16).
constexpr size_t kFloatGroupPairBytes = 64;

// Whether `w` (in the file's row layout) has an interleaved form: Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16 or F16 (even column
// counts) with a multiple of 16 rows.
bool can_interleave(const QuantMatrix& w);

// `w` rewritten in the interleaved layout into `storage` (resized; the
// returned matrix points into it, 64-byte aligned), Q8_0 weights as
// `q8_0` says (other types ignore it). Requires can_interleave(w).
QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage, Q8_0Bytes q8_0);

// interleave() into `out` instead: zeroed, 64-byte aligned, w.rows *
// w.row_bytes bytes (the model's prepared copies write straight into their
// huge pages, band by band, with no buffer between).
void interleave_into(const QuantMatrix& w, uint8_t* out, Q8_0Bytes q8_0);

}  // namespace vllm::kernels
