// Counters behind vllm_engine_stats: a snapshot the engine loop publishes
// after every step, read by any thread.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv_transfer/kv_transfer_stats.h"
#include "spec_decode/speculation_costs.h"

namespace vllm {

// One KV cache group's blocks (kv_cache_group.h), as "kv_cache_groups" shows them.
struct KvCacheGroupStats {
    const char* kind = "";       // "full_attention" | "sliding_window"
    int64_t sliding_window = 0;  // 0 for full attention
    int64_t num_layers = 0;
    int64_t blocks_total = 0;
    int64_t blocks_used = 0;
    int64_t blocks_free = 0;
    int64_t blocks_cached = 0;
    int64_t bytes = 0;           // K and V of all its blocks, in all its layers
};

// Speculative decoding's counters (vLLM's spec_decode metrics): drafts
// verified, their tokens, the tokens accepted, and per draft position how
// often it was accepted (position i counts only when 0..i-1 were too).
struct SpecDecodeStats {
    const char* method = "";
    int64_t num_drafts = 0;
    int64_t num_draft_tokens = 0;
    int64_t num_accepted_tokens = 0;
    std::vector<int64_t> num_accepted_tokens_per_pos;  // num_speculative_tokens entries
    // The draft model's own KV cache (0 for the model-free proposers).
    int64_t draft_kv_blocks_total = 0;
    int64_t draft_kv_blocks_free = 0;
    // What the dynamic switch has measured (speculation_costs.h), so its
    // choices can be followed from outside: a draft token's seconds (unset
    // before the first draft) and the target forwards' seconds (medians of
    // recent samples) by the sequences in them and the positions they
    // computed.
    std::optional<double> draft_token_seconds;
    std::vector<SpeculationCosts::Measured> forward_seconds;
};

// The kv_blocks_* fields are the primary KV cache group's (full attention
// when the model has any full-attention layer, else its sliding group);
// kv_cache_groups lists every group, the primary first.
struct EngineStats {
    int64_t running_requests = 0;
    int64_t waiting_requests = 0;
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_used = 0;    // referenced by a live request
    int64_t kv_blocks_free = 0;    // allocatable (includes cached ones)
    int64_t kv_blocks_cached = 0;  // holding prefix-cache content
    int64_t block_size = 0;
    int64_t kv_cache_bytes = 0;    // all groups' K/V storage together
    bool prefix_caching = false;
    const char* isa = "";        // the kernel build in use (kernels::active_isa)
    int64_t prefix_cache_queries = 0;  // prompt tokens looked up
    int64_t prefix_cache_hits = 0;     // of those, found cached
    int64_t prompt_tokens = 0;         // submitted prompt tokens
    int64_t generation_tokens = 0;     // tokens sampled
    int64_t preemptions = 0;
    int64_t model_steps = 0;           // forward passes
    int64_t jump_forward_tokens = 0;   // tokens appended by jump-forward, not sampled
    int64_t requests_finished = 0;
    int64_t requests_aborted = 0;
    int64_t pooling_requests = 0;      // pooling (embedding) requests finished with their vector
    // vLLM's names of what the engine serves ("generate", "embed"): its runner.
    std::vector<const char*> supported_tasks;
    std::vector<KvCacheGroupStats> kv_cache_groups;
    // With a kv_transfer_config: the connector's counters (else null in JSON).
    std::optional<kv_transfer::KvTransferStats> kv_transfer;
    std::optional<SpecDecodeStats> spec_decode;  // unset: speculation off
    // With enable_lora (else left out of the JSON): the registry's counters
    // (engine/lora_registry.h) and the names of the adapters that running
    // and waiting requests use (vLLM's vllm:lora_requests_info labels).
    struct Lora {
        int64_t registered = 0, resident = 0, loads = 0, evictions = 0;
        int64_t max_loras = 0, max_lora_rank = 0;
        std::vector<std::string> running_adapters, waiting_adapters;
    };
    std::optional<Lora> lora;
    // With a vision tower (issue 46; else left out of the JSON): images
    // encoded (tower runs), encoder cache hits, their encode time.
    struct Vision {
        int64_t images_encoded = 0, encoder_cache_hits = 0;
        double encode_seconds = 0;
    };
    std::optional<Vision> vision;
    // A mixture-of-experts model whose experts are copied into the
    // kernels' layout on first routing (model/expert_preparation.h; else
    // left out of the JSON): experts prepared of all layers' experts, the
    // copies' bytes, and the most they can take (every expert routed: the
    // experts' bytes in the file, whose pages are released as copied).
    struct PreparedExperts {
        int64_t experts = 0, experts_total = 0, bytes = 0, max_bytes = 0;
    };
    std::optional<PreparedExperts> prepared_experts;

    std::string to_json() const;
};

}  // namespace vllm
