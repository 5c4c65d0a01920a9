// One KV cache group (vLLM V1's KV cache groups): the layers that attend
// alike — full attention, or a sliding window of one width — with their own
// block pool. Every request has one block table per group, and the layers
// of a group read and write the blocks that table names. What differs by
// kind lives here (vLLM's FullAttentionManager and SlidingWindowManager):
//
// - Which blocks a request still needs. A query at position p of a sliding
//   layer reads keys (p - window, p] only, so once a request's computed
//   tokens have moved past a block's window it is given back to the pool
//   (it stays cached in the LRU like any freed block) and its table entry
//   becomes kNullBlock. A full-attention group keeps every block.
// - Which prefix-cache hits it can supply. A full group needs every block
//   of [0, L); a sliding group only the blocks covering the window before L,
//   so it searches from the right for the longest such run.
//
// A third kind (vLLM's MambaManager) holds the recurrent state of linear-
// attention layers (Qwen3.5's Gated DeltaNet): a request holds exactly one
// block of it, its state slot (the layers' conv and delta-rule states,
// whatever its length), from its first scheduled step until it is freed
// (finished, aborted, preempted). It keeps no per-position state, so it can
// supply no prefix-cache hit (the engine turns prefix caching off for such
// models) and its block is never recorded in the prefix cache.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/block_hash_chain.h"
#include "core/block_pool.h"

namespace vllm {

struct KVCacheGroupSpec {
    int sliding_window = 0;   // 0: full attention
    std::vector<int> layers;  // ascending
    // The recurrent-state kind; state_bytes: one request's state (its block).
    bool recurrent = false;
    int64_t state_bytes = 0;

    bool is_sliding() const { return sliding_window > 0; }
    // "full_attention", "sliding_window" or "recurrent_state" (the stats' name for the kind).
    const char* kind_name() const {
        return recurrent ? "recurrent_state" : is_sliding() ? "sliding_window" : "full_attention";
    }
};

// A model's groups from each layer's window (0: full attention): one group
// per distinct window, full attention first, then by width. A model with no
// sliding layers has exactly one group, as before groups existed. The layers
// where `recurrent` is set (if given) form one recurrent-state group after
// the others, holding `state_bytes` per request.
std::vector<KVCacheGroupSpec> group_layers_by_window(const std::vector<int>& layer_windows,
                                                     const std::vector<bool>& recurrent = {},
                                                     int64_t state_bytes = 0);

// At most this many groups (a full group and one window: every supported
// architecture has a single window width).
constexpr int kMaxKvCacheGroups = 2;

class KVCacheGroup {
public:
    KVCacheGroup(KVCacheGroupSpec spec, int num_blocks, int block_size);

    const KVCacheGroupSpec& spec() const { return spec_; }
    const BlockPool& pool() const { return pool_; }
    BlockPool& pool() { return pool_; }

    // Blocks a request holding `have` needs more to cover `blocks_after`
    // blocks of positions (the recurrent kind: its one slot).
    int blocks_needed(int have, int blocks_after) const {
        if (spec_.recurrent) return have == 0 ? 1 : 0;
        return blocks_after > have ? blocks_after - have : 0;
    }

    // Leading blocks that no query at a position >= num_computed reads
    // (always 0 for full attention).
    int num_skipped_blocks(int num_computed) const;
    // Gives back the table's blocks that num_skipped_blocks says are no
    // longer read, replacing them with kNullBlock.
    void remove_skipped_blocks(std::vector<int32_t>& table, int num_computed);

    // The longest prefix-cache hit of at most `max_blocks` blocks this group
    // can supply: its length in blocks, with `blocks` set to the group's
    // table for it (kNullBlock where the group needs no block).
    int find_longest_hit(const BlockHashChain& chain, int max_blocks, std::vector<int32_t>& blocks) const;

    // The most blocks one running sequence holds in a group of this window,
    // when it computes at most max_chunk tokens per step: the window before
    // the chunk, the chunk, and one block of misalignment.
    static int blocks_per_sequence(int sliding_window, int max_chunk, int block_size);

private:
    KVCacheGroupSpec spec_;
    int block_size_;
    BlockPool pool_;
};

}  // namespace vllm
