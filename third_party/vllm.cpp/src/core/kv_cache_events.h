// What the prefix cache reports to the outside when asked (vLLM's KV cache
// events, kv_events.py): a full block entered a group's prefix cache, or
// left it (evicted to hold other tokens). A router that indexes every
// server's cached blocks (llm-d's precise prefix-cache scorer) reads them.
//
// The engine records the blocks in its own names (the prefix cache's 64-bit
// chain hash, block_hash_chain.h); the consumer turns them into vLLM's
// block hashes (sha256 over the parent hash and the tokens), which need
// the tokens, so a stored block carries them. Recording is off unless a
// sink is attached (one pointer test per cached or evicted block).
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

struct KvCacheEvent {
    enum class Kind : uint8_t { Stored, Removed };
    Kind kind = Kind::Stored;
    int group = 0;             // the KV cache group whose pool holds (held) the block
    uint64_t hash = 0;         // the block's chain hash
    uint64_t parent_hash = 0;  // Stored: the previous block's chain hash; 0 for a sequence's first block
    std::vector<int32_t> tokens;  // Stored: the block's block_size token ids
};

// Where a pool appends its events, in the order they happened. Owned by
// the engine core; touched by the engine loop thread only.
using KvCacheEventSink = std::vector<KvCacheEvent>;

}  // namespace vllm
