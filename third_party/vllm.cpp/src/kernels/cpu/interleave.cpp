// Rewrites row-layout Q4_1 matrices into the interleaved layout
// (interleave.h). Runs once per matrix at model load.
#include "kernels/cpu/interleave.h"

#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant_blocks.h"
#include "util/error.h"

namespace vllm::kernels {

static_assert(kQ4_1GroupBlockBytes == kInterleaveRows * sizeof(BlockQ4_1), "a group block holds its rows' blocks");

bool can_interleave(const QuantMatrix& w) {
    return w.layout == WeightLayout::kRows && w.type == GgmlType::Q4_1 && w.rows > 0 &&
           w.rows % kInterleaveRows == 0 && w.cols % kQK == 0;
}

QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage) {
    if (!can_interleave(w)) throw_invalid_argument("interleave: not a Q4_1 matrix with a multiple of 16 rows");
    const int64_t nb = w.cols / kQK;
    const size_t bytes = static_cast<size_t>(w.rows) * w.row_bytes;
    storage.assign(bytes + 63, 0);
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    uint8_t* out = storage.data() + (64 - address % 64) % 64;

    for (int64_t g = 0; g < w.rows / kInterleaveRows; ++g)
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* dst = out + (g * nb + b) * kQ4_1GroupBlockBytes;
            auto* d = reinterpret_cast<uint16_t*>(dst);
            auto* m = d + kInterleaveRows;
            uint8_t* qs = dst + kQ4_1GroupScalesBytes;
            for (int64_t r = 0; r < kInterleaveRows; ++r) {
                const auto* src = reinterpret_cast<const BlockQ4_1*>(w.data + (g * kInterleaveRows + r) * w.row_bytes) + b;
                d[r] = src->d;
                m[r] = src->m;
                for (int j = 0; j < 4; ++j) std::memcpy(qs + (j * kInterleaveRows + r) * 4, src->qs + 4 * j, 4);
            }
        }
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
