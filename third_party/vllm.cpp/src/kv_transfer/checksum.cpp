#include "kv_transfer/checksum.h"

#include <cstring>

namespace vllm::kv_transfer {

namespace {

constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kPrime2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kPrime3 = 0x165667b19e3779f9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);  // host order: every supported CPU is little-endian (kv_block_record.h)
    return v;
}

uint64_t lane_step(uint64_t lane, uint64_t word) { return rotl(lane + word * kPrime2, 31) * kPrime1; }

// Spreads every input bit over the whole word (the final avalanche).
uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    h ^= h >> 32;
    return h;
}

}  // namespace

uint64_t checksum64(const void* data, size_t n, uint64_t seed) {
    const auto* p = static_cast<const unsigned char*>(data);
    const unsigned char* end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t lanes[4] = {seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1};
        for (; end - p >= 32; p += 32)
            for (int i = 0; i < 4; ++i) lanes[i] = lane_step(lanes[i], load64(p + 8 * i));
        h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18);
        for (uint64_t lane : lanes) h = (h ^ lane_step(0, lane)) * kPrime1 + kPrime3;
    } else {
        h = seed + kPrime3;
    }
    h += static_cast<uint64_t>(n);
    for (; end - p >= 8; p += 8) h = rotl(h ^ lane_step(0, load64(p)), 27) * kPrime1 + kPrime3;
    for (; p < end; ++p) h = rotl(h ^ (*p * kPrime3), 11) * kPrime1;
    return finish(h);
}

}  // namespace vllm::kv_transfer
