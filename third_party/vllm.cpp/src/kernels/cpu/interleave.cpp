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

}  // namespace

bool can_interleave(const QuantMatrix& w) {
    const bool type = w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q8_0;
    return w.layout == WeightLayout::kRows && type && w.rows > 0 &&
           w.rows % kInterleaveRows == 0 && w.cols % kQK == 0;
}

QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage) {
    if (!can_interleave(w))
        throw_invalid_argument("interleave: not a Q4_0, Q4_1 or Q8_0 matrix with a multiple of 16 rows");
    storage.assign(static_cast<size_t>(w.rows) * w.row_bytes + 63, 0);
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    uint8_t* out = storage.data() + (64 - address % 64) % 64;
    if (w.type == GgmlType::Q4_0) interleave_blocks<BlockQ4_0>(w, out);
    else if (w.type == GgmlType::Q4_1) interleave_blocks<BlockQ4_1>(w, out);
    else interleave_blocks<BlockQ8_0>(w, out);
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
