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

namespace {
// `h` mixed with the images overlapping tokens [begin, begin + block_size).
uint64_t with_encoder_inputs(uint64_t h, const std::vector<EncoderSpan>& spans, int64_t begin, int block_size) {
    for (const EncoderSpan& span : spans) {
        if (span.offset >= begin + block_size) break;
        if (span.offset + span.length <= begin) continue;
        h ^= span.content_hash + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h ^= (uint64_t(uint32_t(span.offset)) + 1) * 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
    }
    return h;
}
}  // namespace

void extend_block_hashes(std::vector<uint64_t>& hashes, const std::vector<int32_t>& tokens, int block_size,
                         uint64_t seed, const std::vector<EncoderSpan>* encoder_inputs) {
    const size_t full = tokens.size() / static_cast<size_t>(block_size);
    while (hashes.size() < full) {
        const uint64_t parent = hashes.empty() ? seed : hashes.back();
        const int64_t begin = int64_t(hashes.size()) * block_size;
        uint64_t h = block_hash(parent, tokens.data() + begin, block_size);
        if (encoder_inputs && !encoder_inputs->empty()) h = with_encoder_inputs(h, *encoder_inputs, begin, block_size);
        hashes.push_back(h);
    }
}

}  // namespace vllm
