#include "core/block_pool.h"

namespace vllm {

BlockPool::BlockPool(int num_blocks) : num_blocks_(num_blocks) {
    free_.reserve(num_blocks);
    for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t BlockPool::allocate() {
    if (free_.empty()) return -1;
    int32_t b = free_.back();
    free_.pop_back();
    return b;
}

void BlockPool::release(int32_t block) { free_.push_back(block); }

void BlockPool::release_all(std::vector<int32_t>& blocks) {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) free_.push_back(*it);
    blocks.clear();
}

}  // namespace vllm
