// What passes between a step's stages (vLLM V1's SchedulerOutput and
// ModelRunnerOutput): the scheduler's batch goes to the model runner, and
// what the forward and the sampler made of it comes back to the scheduler's
// update_from_output, the one place that advances a request's state. Here in
// core/ so that the scheduler and its unit tests see them without the engine.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/scheduler_request.h"

namespace vllm {

struct ScheduledRequest {
    SchedulerRequest* request;
    int num_new_tokens;  // run (tokens + spec_token_ids)[num_computed_tokens, + num_new_tokens)

    // The draft tokens riding after the request's last token in this step
    // (a tight token budget may have cut some off). Read before the update.
    int num_drafts() const {
        return std::max(0, request->num_computed_tokens + num_new_tokens - request->num_tokens());
    }
};

// schedule()'s result: the step's batch, in the order the forward runs it.
struct SchedulerOutput {
    std::vector<ScheduledRequest> scheduled;

    bool empty() const { return scheduled.empty(); }
    size_t size() const { return scheduled.size(); }
    const ScheduledRequest& operator[](size_t i) const { return scheduled[i]; }
    std::vector<ScheduledRequest>::const_iterator begin() const { return scheduled.begin(); }
    std::vector<ScheduledRequest>::const_iterator end() const { return scheduled.end(); }
};

// What one scheduled request's step produced.
struct RequestRunOutput {
    // The tokens it gained, in order: the sampled one, or the accepted
    // drafts and the target's next token, and any jump-forward tokens.
    // None for a prefill chunk that does not end the prompt.
    std::vector<int32_t> new_token_ids;
    // Set when its drafts were verified: how many the target accepted. Unset
    // (drafts or not) when sampling failed; the request is then finished.
    std::optional<int> num_accepted_drafts;
    // Its last prompt row was taken (reads_prefix_cache false, a
    // max_tokens_per_step for every-row chunks): an ordinary request from here on.
    bool prompt_rows_done = false;
};

// The step's outputs, one per SchedulerOutput entry, in its order.
struct ModelRunnerOutput {
    std::vector<RequestRunOutput> requests;
};

}  // namespace vllm
