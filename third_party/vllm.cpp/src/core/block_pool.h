// Free list of KV blocks. Allocation hands out the lowest free ids first so
// a run's memory use stays compact. Not thread-safe: the engine step owns it.
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

class BlockPool {
public:
    explicit BlockPool(int num_blocks);

    int num_free() const { return static_cast<int>(free_.size()); }
    int num_blocks() const { return num_blocks_; }

    // -1 when no block is free.
    int32_t allocate();
    void release(int32_t block);
    void release_all(std::vector<int32_t>& blocks);

private:
    int num_blocks_;
    std::vector<int32_t> free_;  // a stack: back() is the next to hand out
};

}  // namespace vllm
