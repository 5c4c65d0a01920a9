// The prefix cache's names for a token sequence's full blocks: block i is
// known by a BlockKey holding block i-1's hash and its own tokens, so equal
// keys mean equal prefixes. One chain serves every KV cache group (a hit in
// one group is a hit of the same tokens in another). Keys are computed
// lazily, left to right, as far as a lookup asks.
#pragma once
#include <cstdint>
#include <vector>

#include "core/block_pool.h"

namespace vllm {

class BlockHashChain {
public:
    // `tokens` must outlive the chain.
    BlockHashChain(const std::vector<int32_t>& tokens, int block_size) : tokens_(tokens), block_size_(block_size) {}

    // Full blocks the tokens hold.
    int num_full_blocks() const { return static_cast<int>(tokens_.size()) / block_size_; }
    // The key and hash of block i (i < num_full_blocks()).
    const BlockKey& key(int i);
    uint64_t hash(int i);

    // The key of block i whose predecessor's hash is `parent_hash`, without a chain.
    static BlockKey key_of(const std::vector<int32_t>& tokens, int block_size, int i, uint64_t parent_hash);

private:
    void extend_to(int i);

    const std::vector<int32_t>& tokens_;
    int block_size_;
    std::vector<BlockKey> keys_;
    std::vector<uint64_t> hashes_;
};

}  // namespace vllm
