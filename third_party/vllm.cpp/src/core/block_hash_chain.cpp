#include "core/block_hash_chain.h"

#include <cstddef>

namespace vllm {

uint64_t block_hash(uint64_t parent_hash, const int32_t* tokens, int block_size) {
    // FNV-1a over the parent hash and the token ids, then a final mix.
    uint64_t h = 1469598103934665603ull ^ parent_hash;
    auto mix = [&h](uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xFF;
            h *= 1099511628211ull;
        }
    };
    mix(parent_hash);
    for (int i = 0; i < block_size; ++i) mix(static_cast<uint32_t>(tokens[i]));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

void extend_block_hashes(std::vector<uint64_t>& hashes, const std::vector<int32_t>& tokens, int block_size,
                         uint64_t seed) {
    const size_t full = tokens.size() / static_cast<size_t>(block_size);
    while (hashes.size() < full) {
        const uint64_t parent = hashes.empty() ? seed : hashes.back();
        hashes.push_back(block_hash(parent, tokens.data() + hashes.size() * block_size, block_size));
    }
}

}  // namespace vllm
