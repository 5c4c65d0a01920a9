// Fake requests for the core/ unit tests (scheduler, KV cache manager): no
// model, no tokenizer, only token ids, and a step that does what the engine
// core does with a scheduled batch (compute, commit, append a token at the
// end of the known tokens).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "core/scheduler_request.h"

namespace vllm_test {

// `n` distinct ids counting up from 3 + `first` (core never looks them up).
inline std::vector<int32_t> token_ids(int n, int first = 0) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(3 + first + i);
    return t;
}

inline std::unique_ptr<vllm::SchedulerRequest> fake_request(std::vector<int32_t> prompt, uint64_t arrival = 0,
                                                            int32_t priority = 0) {
    return std::make_unique<vllm::SchedulerRequest>(arrival, priority, std::move(prompt));
}

// One engine step over a scheduled batch: every request computes its tokens,
// the manager caches its full blocks, and one that reached the end of its
// tokens gets `next_token` appended (a decode's sampled token).
inline void complete_step(vllm::KVCacheManager& kv, const std::vector<vllm::ScheduledRequest>& batch,
                          int32_t next_token = 7) {
    for (const vllm::ScheduledRequest& s : batch) {
        s.request->num_computed_tokens += s.num_new_tokens;
        kv.commit_computed(*s.request);
        if (s.request->num_computed_tokens == s.request->num_tokens()) s.request->append_token(next_token);
    }
}

}  // namespace vllm_test
