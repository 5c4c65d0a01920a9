// The prefix cache's names for a token sequence's full blocks: block i is
// known by the hash of block i-1's hash and its own tokens, so equal hashes
// name equal prefixes (the pool also compares the tokens and the parent
// hash on lookup, so a collision costs a miss, not wrong output). One chain
// serves every KV cache group (a hit in one group is a hit of the same
// tokens in another). As in vLLM, a request's hashes are computed once:
// SchedulerRequest::block_hashes is extended as its tokens fill blocks.
#pragma once
#include <cstdint>
#include <vector>

#include "core/block_pool.h"
#include "core/scheduler_request.h"

namespace vllm {

// The hash of a block holding `tokens` (block_size ids) after a block whose
// hash is `parent_hash` (0 for the first block).
uint64_t block_hash(uint64_t parent_hash, const int32_t* tokens, int block_size);

// Extends `hashes` (those of the first full blocks of `tokens`) to every
// full block `tokens` holds. `seed`: the first block's parent hash (a LoRA
// adapter's key, SchedulerRequest::adapter_key; 0 for the base model).
// `encoder_inputs` (SchedulerRequest::encoder_inputs, in prompt order):
// each block also hashes the content hash and offset of every image whose
// placeholder tokens it overlaps, so equal placeholder tokens of different
// images name different blocks.
void extend_block_hashes(std::vector<uint64_t>& hashes, const std::vector<int32_t>& tokens, int block_size,
                         uint64_t seed = 0, const std::vector<EncoderSpan>* encoder_inputs = nullptr);

// A view of a token sequence's full blocks and their hashes (both must
// outlive it; `hashes` from extend_block_hashes).
class BlockHashChain {
public:
    BlockHashChain(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& hashes, int block_size,
                   uint64_t seed = 0)
        : tokens_(tokens), hashes_(hashes), block_size_(block_size), seed_(seed) {}

    int num_blocks() const { return static_cast<int>(hashes_.size()); }
    // Block i's key (i < num_blocks()).
    BlockKey key(int i) const {
        return BlockKey{hashes_[i], i == 0 ? seed_ : hashes_[i - 1], tokens_.data() + int64_t(i) * block_size_};
    }

private:
    const std::vector<int32_t>& tokens_;
    const std::vector<uint64_t>& hashes_;
    int block_size_;
    uint64_t seed_;
};

}  // namespace vllm
