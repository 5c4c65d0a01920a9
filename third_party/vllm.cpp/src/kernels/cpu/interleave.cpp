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
static_assert(kQ5_0GroupBlockBytes == kInterleaveRows * sizeof(BlockQ5_0), "a group block holds its rows' blocks");
static_assert(kQ5_1GroupBlockBytes == kInterleaveRows * sizeof(BlockQ5_1), "a group block holds its rows' blocks");
static_assert(kQ5_0GroupPlaneOffset + 64 == kQ5_0GroupBlockBytes, "the plane ends a Q5_0 group block");
static_assert(kQ5_1GroupPlaneOffset + 64 == kQ5_1GroupBlockBytes, "the plane ends a Q5_1 group block");
static_assert(kQ4_KGroupBlockBytes == kInterleaveRows * sizeof(BlockQ4_K), "a group block holds its rows' blocks");
static_assert(kQ4_KGroupRunsOffset + 8 * 256 == kQ4_KGroupBlockBytes, "8 sub-blocks of 4 runs end a Q4_K group block");
static_assert(kQ5_KGroupBlockBytes == kInterleaveRows * sizeof(BlockQ5_K), "a group block holds its rows' blocks");
static_assert(kQ5_KGroupPlaneOffset + 8 * 64 == kQ5_KGroupBlockBytes, "8 sub-blocks' planes end a Q5_K group block");
static_assert(kQ6_KGroupBlockBytes == kInterleaveRows * sizeof(BlockQ6_K), "a group block holds its rows' blocks");
static_assert(kQ6_KGroupHighOffset + 16 * 64 == kQ6_KGroupBlockBytes, "16 high runs end a Q6_K group block");

// A 4-bit block's 16 bytes of nibbles as row r of the 4 runs at `runs`.
void put_nibble_runs(const uint8_t* qs, int64_t r, uint8_t* runs) {
    for (int j = 0; j < 4; ++j) std::memcpy(runs + 64 * j + 4 * r, qs + 4 * j, 4);
}

// Row r's fp16 scale d (and min m where the format has one, else null)
// and its nibbles, at the group block's runs_offset.
void put_scale_nibbles(uint16_t d, const uint16_t* m, const uint8_t* qs, int64_t r, uint8_t* dst, size_t runs_offset) {
    auto* scales = reinterpret_cast<uint16_t*>(dst);
    scales[r] = d;
    if (m) scales[kInterleaveRows + r] = *m;
    put_nibble_runs(qs, r, dst + runs_offset);
}

// A Q5 block's fifth bits (qh, bit l for element l) as row r's bytes of
// the fifth-bit plane (interleave.h).
void put_fifth_bits(const uint8_t* qh, int64_t r, uint8_t* plane) {
    uint32_t high;
    std::memcpy(&high, qh, sizeof high);
    for (int l = 0; l < kQK; ++l) plane[4 * r + l % 4] |= static_cast<uint8_t>(((high >> l) & 1) << (l / 4));
}

// Block b of row r (of the group) into the group block `dst`.
void put(const BlockQ4_0& src, int64_t r, uint8_t* dst) {
    put_scale_nibbles(src.d, nullptr, src.qs, r, dst, kQ4_0GroupRunsOffset);
}

void put(const BlockQ4_1& src, int64_t r, uint8_t* dst) {
    put_scale_nibbles(src.d, &src.m, src.qs, r, dst, kQ4_1GroupRunsOffset);
}

void put(const BlockQ5_0& src, int64_t r, uint8_t* dst) {
    put_scale_nibbles(src.d, nullptr, src.qs, r, dst, kQ5_0GroupRunsOffset);
    put_fifth_bits(src.qh, r, dst + kQ5_0GroupPlaneOffset);
}

void put(const BlockQ5_1& src, int64_t r, uint8_t* dst) {
    put_scale_nibbles(src.d, &src.m, src.qs, r, dst, kQ5_1GroupRunsOffset);
    put_fifth_bits(src.qh, r, dst + kQ5_1GroupPlaneOffset);
}

// The parts Q4_K and Q5_K share: d, dmin, scales and mins, and the nibbles.
template <class Block>
void put_k4_k5(const Block& src, int64_t r, uint8_t* dst) {
    reinterpret_cast<uint16_t*>(dst)[r] = src.d;
    reinterpret_cast<uint16_t*>(dst + kQ4_KGroupDminOffset)[r] = src.dmin;
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(src.scales, j, &sc, &m);
        dst[kQ4_KGroupScalesOffset + 16 * j + r] = static_cast<uint8_t>(sc | (m >> 4) << 6);
        dst[kQ4_KGroupMinsOffset + 16 * (j / 2) + r] |= static_cast<uint8_t>((m & 0xf) << (4 * (j % 2)));
        // Sub-block j's 32 elements as a Q4_0 block's nibbles: the file
        // pairs sub-blocks 2c and 2c + 1 in the low and high nibbles of
        // qs[32c ..]. Eight bytes at a time in a word (bytes gathered one
        // by one into a buffer and read back whole stalled the load).
        const uint8_t* qs = src.qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        constexpr uint64_t kLowNibbles = 0x0f0f0f0f0f0f0f0full;
        uint8_t* runs = dst + kQ4_KGroupRunsOffset + 256 * j;
        for (int half = 0; half < 2; ++half) {
            uint64_t lo, hi;
            std::memcpy(&lo, qs + 8 * half, 8);
            std::memcpy(&hi, qs + 16 + 8 * half, 8);
            const uint64_t nibbles = ((lo >> shift) & kLowNibbles) | ((hi >> shift) & kLowNibbles) << 4;
            // Bytes 8 * half .. + 7 of the block's 16: runs 2 * half and 2 * half + 1.
            std::memcpy(runs + 64 * (2 * half) + 4 * r, &nibbles, 4);
            std::memcpy(runs + 64 * (2 * half + 1) + 4 * r, reinterpret_cast<const uint8_t*>(&nibbles) + 4, 4);
        }
    }
}

void put(const BlockQ4_K& src, int64_t r, uint8_t* dst) { put_k4_k5(src, r, dst); }

void put(const BlockQ5_K& src, int64_t r, uint8_t* dst) {
    put_k4_k5(src, r, dst);
    // Bit j of qh[l] is the fifth bit of element 32j + l.
    for (int j = 0; j < 8; ++j) {
        uint8_t qh[4] = {};
        for (int l = 0; l < 32; ++l) qh[l / 8] |= static_cast<uint8_t>(((src.qh[l] >> j) & 1) << (l % 8));
        put_fifth_bits(qh, r, dst + kQ5_KGroupPlaneOffset + 64 * j);
    }
}

void put(const BlockQ6_K& src, int64_t r, uint8_t* dst) {
    reinterpret_cast<uint16_t*>(dst)[r] = src.d;
    for (int j = 0; j < 16; ++j) dst[kQ6_KGroupScalesOffset + 16 * j + r] = static_cast<uint8_t>(src.scales[j]);
    // Straight from the block's bytes (q6_k_value per element made this the
    // load's slowest step): ql[l] holds the low 4 bits of element l (low
    // nibble) and l + 64 (high) of the first 128, ql[64 + l] the same of the
    // second 128; bits 2k..2k + 1 of qh[l] (qh[32 + l]) are the top 2 of
    // element 32k + l (128 + 32k + l).
    uint8_t low[128], high[64];
    for (int e = 0; e < 64; ++e) {
        low[e] = static_cast<uint8_t>((src.ql[e] & 0x0f) | (src.ql[64 + e] & 0x0f) << 4);
        low[64 + e] = static_cast<uint8_t>((src.ql[e] >> 4) | (src.ql[64 + e] & 0xf0));
    }
    // high[e], bits 2s..2s + 1: the top 2 of element 64s + e.
    for (int e = 0; e < 64; ++e) {
        const int l = e % 32, shift = 2 * (e / 32);
        high[e] = static_cast<uint8_t>(((src.qh[l] >> shift) & 3) | ((src.qh[l] >> (shift + 4)) & 3) << 2 |
                                       ((src.qh[32 + l] >> shift) & 3) << 4 | ((src.qh[32 + l] >> (shift + 4)) & 3) << 6);
    }
    for (int p = 0; p < 32; ++p) std::memcpy(dst + kQ6_KGroupLowOffset + 64 * p + 4 * r, low + 4 * p, 4);
    for (int p = 0; p < 16; ++p) std::memcpy(dst + kQ6_KGroupHighOffset + 64 * p + 4 * r, high + 4 * p, 4);
}

// Q8_0 in the form `bytes` asks for (u8 plus 128, or the file's s8).
void put(const BlockQ8_0& src, int64_t r, uint8_t* dst, Q8_0Bytes bytes) {
    const uint8_t flip = bytes == Q8_0Bytes::kPlus128 ? 0x80 : 0;
    reinterpret_cast<uint16_t*>(dst)[r] = src.d;
    for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i)
            dst[kQ8_0GroupRunsOffset + 64 * j + 4 * r + i] = static_cast<uint8_t>(src.qs[4 * j + i] ^ flip);
}

// kElements: a block's elements (kQK, or kQKK for the K-quants); `form`:
// what the type's put() takes beyond the block (Q8_0's bytes).
template <class Block, int kElements, class... Form>
void interleave_blocks(const QuantMatrix& w, uint8_t* out, Form... form) {
    const int64_t nb = w.cols / kElements;
    for (int64_t g = 0; g < w.rows / kInterleaveRows; ++g)
        for (int64_t r = 0; r < kInterleaveRows; ++r) {
            const auto* row = reinterpret_cast<const Block*>(w.data + (g * kInterleaveRows + r) * w.row_bytes);
            for (int64_t b = 0; b < nb; ++b) put(row[b], r, out + (g * nb + b) * kInterleaveRows * sizeof(Block), form...);
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
    const bool quantized = w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q5_0 ||
                           w.type == GgmlType::Q5_1 || w.type == GgmlType::Q8_0;
    const bool k_quant = w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K || w.type == GgmlType::Q6_K;
    const bool float16 = w.type == GgmlType::BF16 || w.type == GgmlType::F16;
    return w.layout == WeightLayout::kRows && w.rows > 0 && w.rows % kInterleaveRows == 0 &&
           ((quantized && w.cols % kQK == 0) || (k_quant && w.cols % kQKK == 0) ||
            (float16 && w.cols > 0 && w.cols % 2 == 0));
}

namespace {

void require_interleavable(const QuantMatrix& w) {
    if (!can_interleave(w))
        throw_invalid_argument("interleave: not a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K or (with an even column count) "
                               "BF16 or F16 matrix with a multiple of 16 rows");
}

}  // namespace

void interleave_into(const QuantMatrix& w, uint8_t* out, Q8_0Bytes q8_0) {
    require_interleavable(w);
    if (w.type == GgmlType::Q4_0) interleave_blocks<BlockQ4_0, kQK>(w, out);
    else if (w.type == GgmlType::Q4_1) interleave_blocks<BlockQ4_1, kQK>(w, out);
    else if (w.type == GgmlType::Q5_0) interleave_blocks<BlockQ5_0, kQK>(w, out);
    else if (w.type == GgmlType::Q5_1) interleave_blocks<BlockQ5_1, kQK>(w, out);
    else if (w.type == GgmlType::Q8_0) interleave_blocks<BlockQ8_0, kQK>(w, out, q8_0);
    else if (w.type == GgmlType::Q4_K) interleave_blocks<BlockQ4_K, kQKK>(w, out);
    else if (w.type == GgmlType::Q5_K) interleave_blocks<BlockQ5_K, kQKK>(w, out);
    else if (w.type == GgmlType::Q6_K) interleave_blocks<BlockQ6_K, kQKK>(w, out);
    else interleave_float(w, out);
}

QuantMatrix interleave(const QuantMatrix& w, std::vector<uint8_t>& storage, Q8_0Bytes q8_0) {
    require_interleavable(w);
    storage.assign(static_cast<size_t>(w.rows) * w.row_bytes + 63, 0);
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    uint8_t* out = storage.data() + (64 - address % 64) % 64;
    interleave_into(w, out, q8_0);
    QuantMatrix packed = w;
    packed.data = out;
    packed.layout = WeightLayout::kInterleaved16;
    packed.q8_0_bytes = q8_0;
    return packed;
}

QuantMatrix matmul_layout(const QuantMatrix& w) {
    const int slot = kernel_slot(w.type);
    const IsaKernels& isa = active_kernels();
    if (!can_interleave(w) || slot < 0 || isa.gemm_interleaved[slot] == nullptr) return w;
    QuantMatrix form = w;
    form.layout = WeightLayout::kInterleaved16;
    form.q8_0_bytes = isa.q8_0_bytes;
    return form;
}

void write_matmul_layout(const QuantMatrix& w, const QuantMatrix& form, uint8_t* out) {
    if (form.layout == WeightLayout::kInterleaved16)
        interleave_into(w, out, form.q8_0_bytes);
    else
        std::memcpy(out, w.data, static_cast<size_t>(w.rows) * w.row_bytes);
}

QuantMatrix prepare_for_matmul(const QuantMatrix& w, std::vector<uint8_t>& storage) {
    const QuantMatrix form = matmul_layout(w);
    return form.layout == WeightLayout::kRows ? w : interleave(w, storage, form.q8_0_bytes);
}

}  // namespace vllm::kernels
