// Fake requests for the core/ unit tests (scheduler, KV cache manager): no
// model, no tokenizer, only token ids, and a fake model-runner output that
// the scheduler's own update_from_output (the one the engine calls) applies.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "core/scheduler_output.h"
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

// What a model runner reports for `batch` without drafts: a request whose
// scheduled tokens reach the end of its tokens samples `next_token` (a
// decode, or a prompt's last chunk); an earlier prefill chunk samples none.
inline vllm::ModelRunnerOutput fake_run_output(const vllm::SchedulerOutput& batch, int32_t next_token = 7) {
    vllm::ModelRunnerOutput output;
    for (const vllm::ScheduledRequest& s : batch) {
        vllm::RequestRunOutput& out = output.requests.emplace_back();
        if (s.request->num_computed_tokens + s.num_new_tokens >= s.request->num_tokens())
            out.new_token_ids.push_back(next_token);
    }
    return output;
}

// One engine step over a scheduled batch through the scheduler's update:
// every request computes its tokens, its full blocks are committed, and one
// that reached its end gets `next_token` appended.
inline void complete_step(vllm::Scheduler& scheduler, const vllm::SchedulerOutput& batch, int32_t next_token = 7) {
    scheduler.update_from_output(batch, fake_run_output(batch, next_token));
}

}  // namespace vllm_test
