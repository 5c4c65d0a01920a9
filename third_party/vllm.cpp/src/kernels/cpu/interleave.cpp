// Rewrites row-layout matrices into the interleaved layout (interleave.h).
// Runs once per matrix at model load.
#include "kernels/cpu/interleave.h"

#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant_blocks.h"
#include "util/error.h"

namespace vllm::kernels {

namespace {

static_assert(kQ4_0GroupBlockBytes == kInterleaveRows * sizeof(BlockQ4_0), "a group block holds its rows' blocks");
static_assert(kQ4_1GroupBlockBytes == kInterleaveRows * sizeof(BlockQ4_1), "a group block holds its rows' blocks");
static_assert(kQ8_0GroupBlockBytes == kInterleaveRows * sizeof(BlockQ8_0), "a group block holds its rows' blocks");

// A 4-bit block's 16 bytes of nibbles as row r of the 4 runs at `runs`.
void put_nibble_runs(const uint8_t* qs, int64_t r, uint8_t* runs) {
    for (int j = 0; j < 4; ++j) std::memcpy(runs + 64 * j + 4 * r, qs + 4 * j, 4);
}

// Block b of row r (of the group) into the group block `dst`.
void put(const BlockQ4_0& src, int64_t r, uint8_t* dst) {
    reinterpret_cast<uint16_t*>(dst)[r] = src.d;
    put_nibble_runs(src.qs, r, dst + kQ4_0GroupRunsOffset);
}

void put(const BlockQ4_1& src, int64_t r, uint8_t* dst) {
    auto* d = reinterpret_cast<uint16_t*>(dst);
    d[r] = src.d;
    d[kInterleaveRows + r] = src.m;
    put_nibble_runs(src.qs, r, dst + kQ4_1GroupRunsOffset);
}

void put(const BlockQ8_0& src, int64_t r, uint8_t* dst) {
    reinterpret_cast<uint16_t*>(dst)[r] = src.d;
    for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i)
            dst[kQ8_0GroupRunsOffset + 64 * j + 4 * r + i] = static_cast<uint8_t>(src.qs[4 * j + i] ^ 0x80);
}

template <class Block>
void interleave_blocks(const QuantMatrix& w, uint8_t* out) {
    const int64_t nb = w.cols / kQK;
    for (int64_t g = 0; g < w.rows / kInterleaveRows; ++g)
        for (int64_t r = 0; r < kInterleaveRows; ++r) {
            const auto* row = reinterpret_cast<const Block*>(w.data + (g * kInterleaveRows + r) * w.row_bytes);
            for (int64_t b = 0; b < nb; ++b) put(row[b], r, out + (g * nb + b) * kInterleaveRows * sizeof(Block));
        }
}

// The 16-bit elements of a float matrix (BF16, F16) into their group pairs.
void interleave_float(const QuantMatrix& w, uint8_t* out) {
    const bool bf16 = w.type == GgmlType::BF16;
    auto* dst = reinterpret_cast<uint16_t*>(out);
    for (int64_t g = 0; g < w.rows / kInterleaveRows; ++g)
        for (int64_t r = 0; r < kInterleaveRows; ++r) {
            const auto* row = reinterpret_cast<const uint16_t*>(w.data + (g * kInterleaveRows + r) * w.row_bytes);
            uint16_t* group = dst + g * kInterleaveRows * w.cols;
            for (int64_t c = 0; c < w.cols; ++c) {
                uint16_t* pair = group + (c / 2) * (kFloatGroupPairBytes / sizeof(uint16_t));
                pair[bf16 ? 2 * r + c % 2 : kInterleaveRows * (c % 2) + r] = row[c];
            }
        }
}

}  // namespace

bool can_interleave(const QuantMatrix& w) {
    const bool quantized = w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q8_0;
    const bool float16 = w.type == GgmlType::BF16 || w.type == GgmlType::F16;
    return w.layout == WeightLayout::kRows && w.rows > 0 && w.rows % kInterleaveRows == 0 &&
           ((quantized && w.cols % kQK == 0) || (float16 && w.cols > 0 && w.cols % 2 == 0));
}

QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage) {
    if (!can_interleave(w))
        throw_invalid_argument("interleave: not a Q4_0, Q4_1, Q8_0 or (with an even column count) BF16 or F16 matrix with a multiple of 16 rows");
    storage.assign(static_cast<size_t>(w.rows) * w.row_bytes + 63, 0);
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    uint8_t* out = storage.data() + (64 - address % 64) % 64;
    if (w.type == GgmlType::Q4_0) interleave_blocks<BlockQ4_0>(w, out);
    else if (w.type == GgmlType::Q4_1) interleave_blocks<BlockQ4_1>(w, out);
    else if (w.type == GgmlType::Q8_0) interleave_blocks<BlockQ8_0>(w, out);
    else interleave_float(w, out);
    QuantMatrix packed = w;
    packed.data = out;
    packed.layout = WeightLayout::kInterleaved16;
    return packed;
}

QuantMatrix prepare_for_matmul(const QuantMatrix& w, std::vector<uint8_t>& storage) {
    const int slot = kernel_slot(w.type);
    if (!can_interleave(w) || slot < 0 || active_kernels().gemm_interleaved[slot] == nullptr) return w;
    return interleave(w, storage);
}

}  // namespace vllm::kernels
