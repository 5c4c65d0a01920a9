// The engine's LoRA adapters (vLLM's LoRA manager on the CPU): adapters
// registered by id and name (vllm_lora_adapter_add), each loaded and
// checked against the base model when registered; at most max_loras kept
// resident, the others loaded again from their directory when a step needs
// them, the least recently used resident one evicted. A request names its
// adapter by id (SamplingConfig::lora_int_id) and holds its registration
// (LoraSpec) for its life, so removing an adapter affects new requests
// only. Registration and removal run on any thread; acquire() on the
// engine loop, whose steps hold the adapters they run (shared_ptr), so an
// eviction never frees weights a forward is reading.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/stats.h"
#include "model/decoder_model.h"
#include "model/lora_adapter.h"

namespace vllm {

struct LoraSpec {
    int32_t id = 0;
    std::string name;
    std::string path;
    uint64_t key = 0;  // unique per registration: SchedulerRequest::adapter_key
};

class LoraRegistry {
public:
    LoraRegistry(const DecoderModel& model, int max_loras, int max_lora_rank);

    // Loads and checks the PEFT directory `path` (MODEL_LOAD naming the
    // adapter, the tensor and the shapes) and registers it. INVALID_ARGUMENT
    // for an id < 1, an empty name, or an id or name already registered.
    void add(int32_t id, const std::string& name, const std::string& path);
    // INVALID_ARGUMENT when no adapter has that id.
    void remove(int32_t id);
    // The registration of `id`; INVALID_ARGUMENT naming the id when none.
    std::shared_ptr<const LoraSpec> find(int32_t id) const;
    // Every registration, by id.
    std::vector<LoraSpec> list() const;

    // Engine loop: `spec`'s weights, loaded again from its path when not
    // resident; a resident adapter outside `in_use` (the step's keys) is
    // evicted, least recently used first, to keep max_loras resident.
    std::shared_ptr<const LoraAdapter> acquire(const std::shared_ptr<const LoraSpec>& spec,
                                               const std::set<uint64_t>& in_use);
    // The counters of EngineStats::Lora (loads from disk, registration's included).
    void fill_stats(EngineStats::Lora& out) const;
    int max_loras() const { return max_loras_; }

private:
    std::shared_ptr<const LoraAdapter> load(const LoraSpec& spec) const;
    // Drops least recently used residents outside `in_use` past max_loras. Holds mutex_.
    void evict_past_limit(const std::set<uint64_t>& in_use);

    const DecoderModel& model_;
    const int max_loras_, max_lora_rank_;
    mutable std::mutex mutex_;
    std::map<int32_t, std::shared_ptr<const LoraSpec>> specs_;
    // Most recently used first: (registration key, weights).
    std::list<std::pair<uint64_t, std::shared_ptr<const LoraAdapter>>> resident_;
    uint64_t next_serial_ = 1;
    int64_t loads_ = 0, evictions_ = 0;
};

}  // namespace vllm
