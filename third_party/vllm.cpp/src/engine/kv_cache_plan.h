// How many KV blocks each KV cache group gets (kv_cache_group.h).
//
// The first group is the "primary" one: full attention when the model has
// any full-attention layer, else its one sliding group. It is sized as the
// whole cache was before groups: `num_blocks` when set (at least one
// max_model_len sequence), else max_num_seqs max_model_len sequences within
// what is left of the budget (VLLM_CPP_KV_CACHE_MB, else the
// kv_cache_memory_bytes option, else 1 GiB), but never less than one (an
// explicit kv_cache_memory_bytes below one is refused). A sliding group besides it needs only blocks_per_sequence() blocks
// per running sequence (the window, the largest chunk, one of slack), so it
// gets that for max_num_seqs sequences — taken from the budget first, and
// never more than the primary group has (a sequence never holds more
// sliding blocks than full ones). For Gemma 3 (five sliding layers in six,
// window 512) most of the memory thus goes to the global layers.
//
// A recurrent-state group (Qwen3.5's linear-attention layers) gets one
// block, a request's state, per max_num_seqs sequence; its bytes
// (ModelConfig::recurrent_state_bytes each) come out of the budget first,
// as a sliding group's do.
//
// With a draft model (speculative method draft_model) the budget also pays
// for the draft's cache, which holds as many tokens as the primary group
// plus each sequence's num_speculative_tokens drafts: a primary block's
// cost is then its own bytes plus block_size tokens of the draft's.
#pragma once
#include <cstdint>
#include <vector>

#include "core/kv_cache_group.h"
#include "engine/engine_config.h"
#include "model/model_config.h"

namespace vllm {

struct KvCachePlan {
    std::vector<KVCacheGroupSpec> groups;
    std::vector<int> group_blocks;  // per group
    int draft_blocks = 0;           // the draft model's cache (0: none)
};

// INVALID_ARGUMENT when num_blocks is set below one sequence's need.
// `draft`: the draft model's config, if there is one.
KvCachePlan plan_kv_cache(const ModelConfig& model, const EngineConfig& config, int max_model_len,
                          const ModelConfig* draft = nullptr);

}  // namespace vllm
