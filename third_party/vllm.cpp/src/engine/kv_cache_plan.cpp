#include "engine/kv_cache_plan.h"

#include <algorithm>
#include <cstdlib>

#include "kv_cache/kv_cache.h"
#include "util/error.h"

namespace vllm {

namespace {

// VLLM_CPP_KV_CACHE_MB when set to a positive number, else the
// kv_cache_memory_bytes option, else the default.
int64_t kv_budget_bytes(const EngineConfig& config) {
    if (const char* env = std::getenv("VLLM_CPP_KV_CACHE_MB")) {
        int64_t v = std::atoll(env);
        if (v > 0) return v << 20;
    }
    if (config.kv_cache_memory_bytes > 0) return config.kv_cache_memory_bytes;
    return int64_t(EngineConfig::kDefaultKvCacheMb) << 20;
}

}  // namespace

KvCachePlan plan_kv_cache(const ModelConfig& model, const EngineConfig& config, int max_model_len,
                          const ModelConfig* draft) {
    KvCachePlan plan;
    std::vector<int> windows(model.n_layers);
    for (int l = 0; l < model.n_layers; ++l) windows[l] = model.is_sliding(l) ? model.sliding_window : 0;
    plan.groups = group_layers_by_window(windows, model.recurrent_layers, model.recurrent_state_bytes());

    const int bs = config.block_size;
    const int blocks_for_one_seq = (max_model_len + bs - 1) / bs;
    const int max_chunk = std::min(config.max_num_batched_tokens, max_model_len);
    auto per_sequence = [&](const KVCacheGroupSpec& g) {
        if (!g.is_sliding()) return blocks_for_one_seq;
        return std::min(blocks_for_one_seq, KVCacheGroup::blocks_per_sequence(g.sliding_window, max_chunk, bs));
    };
    // K and V of one block in each of the given layers (all of the
    // draft's), in each layer's own shape.
    auto block_bytes = [&](const ModelConfig& m, const std::vector<int>& layers) {
        int64_t bytes = 0;
        for (int l : layers) bytes += static_cast<int64_t>(m.kv_shape(l).block_bytes(bs, config.kv_dtype));
        return bytes;
    };
    std::vector<int> draft_layers;
    for (int l = 0; draft && l < draft->n_layers; ++l) draft_layers.push_back(l);
    const int64_t draft_block_bytes = draft ? block_bytes(*draft, draft_layers) : 0;

    // The other (sliding) groups first: their need is small and fixed.
    int64_t sliding_bytes = 0;
    std::vector<int64_t> blocks(plan.groups.size());
    for (size_t g = 1; g < plan.groups.size(); ++g) {
        const KVCacheGroupSpec& group = plan.groups[g];
        // A recurrent-state group: one state per running sequence (its
        // layers keep no K/V: ModelConfig::kv_shape).
        blocks[g] = int64_t(group.recurrent ? 1 : per_sequence(group)) * config.max_num_seqs;
        sliding_bytes += group.recurrent ? blocks[g] * group.state_bytes : blocks[g] * block_bytes(model, group.layers);
    }
    const int64_t budget = kv_budget_bytes(config) - sliding_bytes;

    const int primary_one_seq = per_sequence(plan.groups[0]);
    if (config.num_blocks > 0) {
        if (config.num_blocks < primary_one_seq)
            throw_invalid_argument("num_blocks " + std::to_string(config.num_blocks) + " x block_size " +
                                   std::to_string(bs) + " holds fewer tokens than " +
                                   (plan.groups[0].is_sliding()
                                        ? "one sequence's sliding window and chunk need (" +
                                              std::to_string(primary_one_seq) + " blocks); raise num_blocks"
                                        : "max_model_len " + std::to_string(max_model_len) +
                                              "; raise num_blocks or lower max_model_len"));
        blocks[0] = config.num_blocks;
    } else {
        const int64_t primary_block_bytes =
            std::max<int64_t>(1, block_bytes(model, plan.groups[0].layers) + draft_block_bytes);
        const int64_t budget_blocks = std::max<int64_t>(0, budget) / primary_block_bytes;
        // An explicit budget too small for one sequence is a mistake to
        // report; the default budget only ever grows to one sequence.
        if (config.kv_cache_memory_bytes > 0 && budget_blocks < primary_one_seq)
            throw_invalid_argument("kv_cache_memory_bytes " + std::to_string(config.kv_cache_memory_bytes) +
                                   " holds fewer tokens than max_model_len " + std::to_string(max_model_len) +
                                   " (it needs at least " +
                                   std::to_string(int64_t(primary_one_seq) * primary_block_bytes + sliding_bytes) +
                                   " bytes); raise it or lower max_model_len");
        blocks[0] = std::max<int64_t>(primary_one_seq,
                                      std::min<int64_t>(budget_blocks, int64_t(primary_one_seq) * config.max_num_seqs));
    }
    for (size_t g = 1; g < plan.groups.size(); ++g)
        if (!plan.groups[g].recurrent) blocks[g] = std::min(blocks[g], blocks[0]);
    for (int64_t b : blocks) plan.group_blocks.push_back(static_cast<int>(b));
    if (draft) {
        const int draft_slack = (config.speculative->num_speculative_tokens + bs - 1) / bs;
        plan.draft_blocks = static_cast<int>(blocks[0]) + draft_slack * config.max_num_seqs;
    }
    return plan;
}

}  // namespace vllm
