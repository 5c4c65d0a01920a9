#include "core/block_hash_chain.h"

namespace vllm {

BlockKey BlockHashChain::key_of(const std::vector<int32_t>& tokens, int block_size, int i, uint64_t parent_hash) {
    BlockKey key;
    key.parent_hash = parent_hash;
    const auto first = tokens.begin() + int64_t(i) * block_size;
    key.tokens.assign(first, first + block_size);
    return key;
}

void BlockHashChain::extend_to(int i) {
    while (static_cast<int>(keys_.size()) <= i) {
        const int next = static_cast<int>(keys_.size());
        keys_.push_back(key_of(tokens_, block_size_, next, next == 0 ? 0 : hashes_.back()));
        hashes_.push_back(keys_.back().hash());
    }
}

const BlockKey& BlockHashChain::key(int i) {
    extend_to(i);
    return keys_[i];
}

uint64_t BlockHashChain::hash(int i) {
    extend_to(i);
    return hashes_[i];
}

}  // namespace vllm
