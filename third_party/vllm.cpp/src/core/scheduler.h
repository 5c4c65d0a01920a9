// The continuous-batching scheduler (vLLM V1's shape): each step fills a
// token budget, running requests first (a decode is its new token plus any
// draft tokens, an unfinished prefill its next chunk), then waiting ones in policy order,
// with at most max_num_seqs sequences. KV blocks are taken on demand; when
// none is left the lowest-priority running request is preempted: its blocks
// are freed and it waits to be recomputed (its tokens so far become its
// prompt's continuation, so its output does not change).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/kv_load_gate.h"
#include "core/scheduler_output.h"
#include "core/scheduler_request.h"

namespace vllm {

enum class SchedulingPolicy { FCFS, PRIORITY, LPM };

// "fcfs" | "priority" | "lpm"; INVALID_ARGUMENT otherwise.
SchedulingPolicy parse_scheduling_policy(const std::string& name);

class Scheduler {
public:
    Scheduler(SchedulingPolicy policy, int max_num_seqs, int max_num_batched_tokens, KVCacheManager& kv);

    // KV transfer: a waiting request is admitted only once the gate says
    // its blocks have arrived (or there are none); others are admitted meanwhile.
    void set_load_gate(KvLoadGate* gate) { load_gate_ = gate; }
    // LoRA (vLLM's max_loras): a waiting request whose adapter would make
    // more than `n` distinct adapters run at once steps aside until one
    // finishes (0: no limit).
    void set_max_loras(int n) { max_loras_ = n; }
    // Encoder work (vLLM's encoder compute budget): a step's chunks reach at
    // most this much encoder cost (EncoderSpan::cost) of inputs without
    // rows; a chunk that would pass it stops before that input (0: no limit).
    void set_encoder_budget(int64_t cost) { encoder_budget_ = cost; }

    // A request with waiting_for_grammar set is passed over until it is cleared.
    void add(SchedulerRequest* request);
    // The next step's batch (empty when nothing can run).
    SchedulerOutput schedule();
    // The one place a step advances its requests' state, from what the
    // model runner made of `scheduled` (`output`, in the same order): the
    // computed tokens (drafts only as far as they were accepted), the
    // blocks they filled committed to the prefix cache, the new tokens
    // appended, the drafts consumed, a prompt_logprobs request's limits
    // lifted once its prompt rows are done. Finishing is the engine's (it knows
    // stop strings and errors): it removes a finished request afterwards.
    void update_from_output(const SchedulerOutput& scheduled, const ModelRunnerOutput& output);
    // Drops a finished or aborted request and frees its blocks.
    void remove(SchedulerRequest* request);
    // The requests whose KV blocks could not be allocated (std::bad_alloc)
    // since the last call: already removed, each to be failed alone.
    std::vector<SchedulerRequest*> take_failed();

    int num_running() const { return static_cast<int>(running_.size()); }
    int num_waiting() const { return static_cast<int>(waiting_.size()); }
    bool empty() const { return running_.empty() && waiting_.empty(); }

    // Counters for stats.
    int64_t num_preemptions() const { return num_preemptions_; }
    int64_t prefix_cache_queries() const { return prefix_cache_queries_; }
    int64_t prefix_cache_hits() const { return prefix_cache_hits_; }

private:
    // Position in waiting_ of the request to admit next under the policy.
    size_t next_waiting() const;
    // The running request to give up when blocks run out.
    size_t preemption_victim() const;
    // The tokens `r` computes this step: `remaining`, within the budget and
    // its max_tokens_per_step, which the step's capped requests share
    // (capped_left, set from the first of them).
    static int step_tokens(const SchedulerRequest& r, int budget, int remaining, int& capped_left);
    // `n` new tokens of `r` from position `begin`, cut before its first
    // encoder input without rows that `encoder_left` cannot pay for; the
    // inputs the chunk reaches are paid.
    int encoder_limited(const SchedulerRequest& r, int begin, int n, int64_t& encoder_left) const;
    void preempt(size_t running_index);
    enum class Allocation { Placed, NoRoom, Failed };
    // kv_.allocate; a failed allocation removes the request into failed_.
    Allocation allocate(SchedulerRequest* request, int num_new_tokens, const CachedPrefix& cached = {});

    SchedulingPolicy policy_;
    int max_num_seqs_;
    int max_num_batched_tokens_;
    KVCacheManager& kv_;
    KvLoadGate* load_gate_ = nullptr;
    int max_loras_ = 0;
    int64_t encoder_budget_ = 0;
    std::vector<SchedulerRequest*> running_;  // admission order
    std::vector<SchedulerRequest*> waiting_;  // arrival order; preempted ones go back in front
    std::vector<SchedulerRequest*> failed_;   // see take_failed()
    int64_t num_preemptions_ = 0;
    int64_t prefix_cache_queries_ = 0;
    int64_t prefix_cache_hits_ = 0;
};

}  // namespace vllm
