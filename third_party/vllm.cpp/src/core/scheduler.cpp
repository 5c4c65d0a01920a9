#include "core/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <set>

#include "util/error.h"

namespace vllm {

SchedulingPolicy parse_scheduling_policy(const std::string& name) {
    if (name == "fcfs") return SchedulingPolicy::FCFS;
    if (name == "priority") return SchedulingPolicy::PRIORITY;
    if (name == "lpm") return SchedulingPolicy::LPM;
    throw_invalid_argument("unknown scheduling_policy '" + name + "' (expected 'fcfs', 'priority' or 'lpm')");
}

Scheduler::Scheduler(SchedulingPolicy policy, int max_num_seqs, int max_num_batched_tokens, KVCacheManager& kv)
    : policy_(policy == SchedulingPolicy::LPM && !kv.prefix_caching() ? SchedulingPolicy::FCFS : policy),
      max_num_seqs_(max_num_seqs),
      max_num_batched_tokens_(max_num_batched_tokens),
      kv_(kv) {}

void Scheduler::add(SchedulerRequest* request) { waiting_.push_back(request); }

void Scheduler::remove(SchedulerRequest* request) {
    kv_.free(*request);
    request->status = RequestStatus::FINISHED;
    running_.erase(std::remove(running_.begin(), running_.end(), request), running_.end());
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), request), waiting_.end());
}

std::vector<SchedulerRequest*> Scheduler::take_failed() {
    std::vector<SchedulerRequest*> out;
    out.swap(failed_);
    return out;
}

Scheduler::Allocation Scheduler::allocate(SchedulerRequest* request, int num_new_tokens, const CachedPrefix& cached) {
    try {
        return kv_.allocate(*request, num_new_tokens, cached) ? Allocation::Placed : Allocation::NoRoom;
    } catch (const std::bad_alloc&) {
        // Out of memory for this request's blocks: it alone fails; the
        // others (and the pools, left as they were) go on.
        remove(request);
        failed_.push_back(request);
        return Allocation::Failed;
    }
}

namespace {
// (priority, arrival): the smaller runs first.
bool runs_before(const SchedulerRequest* a, const SchedulerRequest* b) {
    return a->priority != b->priority ? a->priority < b->priority : a->arrival < b->arrival;
}
}  // namespace

size_t Scheduler::next_waiting() const {
    size_t best = 0;
    if (policy_ == SchedulingPolicy::PRIORITY) {
        for (size_t i = 1; i < waiting_.size(); ++i)
            if (runs_before(waiting_[i], waiting_[best])) best = i;
    } else if (policy_ == SchedulingPolicy::LPM) {
        int best_len = kv_.find_cached_prefix(*waiting_[0]).num_tokens;
        for (size_t i = 1; i < waiting_.size(); ++i) {
            const int len = kv_.find_cached_prefix(*waiting_[i]).num_tokens;
            if (len > best_len) best = i, best_len = len;
        }
    }
    return best;  // FCFS: the front (preempted requests were put back there)
}

size_t Scheduler::preemption_victim() const {
    if (policy_ != SchedulingPolicy::PRIORITY) return running_.size() - 1;  // the latest admitted
    size_t victim = 0;
    for (size_t i = 1; i < running_.size(); ++i)
        if (runs_before(running_[victim], running_[i])) victim = i;
    return victim;
}

void Scheduler::preempt(size_t index) {
    SchedulerRequest* r = running_[index];
    running_.erase(running_.begin() + index);
    kv_.free(*r);
    r->num_computed_tokens = 0;
    r->spec_token_ids.clear();  // drafts are proposed again once it runs
    r->status = RequestStatus::WAITING;
    waiting_.insert(waiting_.begin(), r);
    ++num_preemptions_;
}

int Scheduler::step_tokens(const SchedulerRequest& r, int budget, int remaining, int& capped_left) {
    const int n = std::min(budget, remaining);
    if (r.max_tokens_per_step <= 0) return n;
    if (capped_left < 0) capped_left = r.max_tokens_per_step;
    return std::min({n, r.max_tokens_per_step, capped_left});
}

int Scheduler::encoder_limited(const SchedulerRequest& r, int begin, int n, int64_t& encoder_left) const {
    for (const EncoderSpan& span : r.encoder_inputs) {
        if (span.offset + span.length <= begin) continue;
        if (span.offset >= begin + n) break;  // in prompt order: the rest lie beyond the chunk
        // An indivisible image the chunk would cut: the chunk stops before
        // it (or, starting inside it, waits for a step with room for its rest).
        if (span.indivisible && span.offset + span.length > begin + n) return std::max(0, span.offset - begin);
        if (span.has_rows) continue;
        // An input dearer than the whole budget runs in a step that has
        // spent none of it (alone), or it would never run.
        const bool untouched = encoder_budget_ > 0 && encoder_left == encoder_budget_;
        if (span.cost > encoder_left && !untouched) return std::max(0, span.offset - begin);
        encoder_left = std::max<int64_t>(0, encoder_left - span.cost);
    }
    return n;
}

SchedulerOutput Scheduler::schedule() {
    std::vector<ScheduledRequest> batch;
    int budget = max_num_batched_tokens_;
    // What the requests with a max_tokens_per_step may still take together
    // this step (-1: none scheduled yet): their cap bounds the step's
    // logits rows, not one request's alone.
    int capped_left = -1;
    // Encoder cost left this step (unlimited without a budget).
    int64_t encoder_left = encoder_budget_ > 0 ? encoder_budget_ : INT64_MAX;

    // Running requests first, in admission order.
    for (size_t i = 0; i < running_.size() && budget > 0;) {
        SchedulerRequest* r = running_[i];
        if (r->waiting_for_grammar) {  // keeps its blocks; its turn comes when the mask is ready
            ++i;
            continue;
        }
        int n = step_tokens(*r, budget, r->num_tokens_with_spec() - r->num_computed_tokens, capped_left);
        if (!r->encoder_inputs.empty()) n = encoder_limited(*r, r->num_computed_tokens, n, encoder_left);
        if (n == 0) {  // the capped requests' (or the encoder's) share is taken: its turn comes next step
            ++i;
            continue;
        }
        Allocation allocation;
        bool placed = true;
        while ((allocation = allocate(r, n)) == Allocation::NoRoom) {
            const size_t victim = preemption_victim();
            const bool self = running_[victim] == r;
            preempt(victim);
            if (self) {
                placed = false;
                break;
            }
            // A victim scheduled earlier in this step leaves the batch too.
            for (size_t j = 0; j < batch.size(); ++j)
                if (batch[j].request->status == RequestStatus::WAITING) {
                    budget += batch[j].num_new_tokens;
                    if (batch[j].request->max_tokens_per_step > 0) capped_left += batch[j].num_new_tokens;
                    batch.erase(batch.begin() + j);
                    --j;
                }
            if (victim < i) --i;
        }
        if (!placed || allocation == Allocation::Failed) continue;  // r left running_; i points at the next one
        batch.push_back({r, n});
        budget -= n;
        if (r->max_tokens_per_step > 0) capped_left -= n;
        ++i;
    }

    // Then waiting requests, while budget and sequence slots last. A
    // request that does not fit stops admission (no overtaking), as in vLLM;
    // one whose KV blocks are still arriving, or whose grammar is not ready,
    // steps aside for this step.
    std::vector<SchedulerRequest*> arriving;
    std::set<uint64_t> adapters;  // the running requests' LoRA adapters (max_loras)
    if (max_loras_ > 0)
        for (const SchedulerRequest* r : running_)
            if (r->adapter_key != 0) adapters.insert(r->adapter_key);
    while (!waiting_.empty() && budget > 0 && static_cast<int>(running_.size()) < max_num_seqs_) {
        const size_t w = next_waiting();
        SchedulerRequest* r = waiting_[w];
        if (r->waiting_for_grammar || (max_loras_ > 0 && r->adapter_key != 0 && !adapters.count(r->adapter_key) &&
                                       static_cast<int>(adapters.size()) >= max_loras_)) {
            // steps aside, as one whose KV blocks are arriving (or whose adapter waits for a free slot)
            arriving.push_back(r);
            waiting_.erase(waiting_.begin() + w);
            continue;
        }
        // The computed start it can adopt (blocks a KV connector loaded
        // included: they were put into the prefix cache).
        const CachedPrefix cached = kv_.find_cached_prefix(*r);
        const int cached_tokens = cached.num_tokens;
        if (load_gate_ && r->reads_prefix_cache && !load_gate_->ready_to_admit(*r, cached_tokens)) {
            arriving.push_back(r);
            waiting_.erase(waiting_.begin() + w);
            continue;
        }
        int n = step_tokens(*r, budget, r->num_tokens() - cached_tokens, capped_left);
        if (!r->encoder_inputs.empty()) n = encoder_limited(*r, cached_tokens, n, encoder_left);
        if (n == 0) break;  // the capped requests' (or the encoder's) share is taken (no overtaking)
        if (r->whole_prompt && n < r->num_tokens() - cached_tokens) break;  // waits for a step with room (no overtaking)
        const Allocation allocation = allocate(r, n, cached);
        if (allocation == Allocation::Failed) continue;  // r left waiting_
        if (allocation == Allocation::NoRoom) break;
        if (!r->admitted_once) {
            r->admitted_once = true;
            r->num_cached_prompt_tokens = cached_tokens;
            if (kv_.prefix_caching()) {
                prefix_cache_queries_ += r->num_prompt_tokens;
                prefix_cache_hits_ += cached_tokens;
            }
        }
        waiting_.erase(waiting_.begin() + w);
        r->status = RequestStatus::RUNNING;
        running_.push_back(r);
        if (r->adapter_key != 0) adapters.insert(r->adapter_key);
        batch.push_back({r, n});
        budget -= n;
        if (r->max_tokens_per_step > 0) capped_left -= n;
    }
    waiting_.insert(waiting_.begin(), arriving.begin(), arriving.end());  // in the order they were passed over
    return SchedulerOutput{std::move(batch)};
}

void Scheduler::update_from_output(const SchedulerOutput& scheduled, const ModelRunnerOutput& output) {
    for (size_t i = 0; i < scheduled.size(); ++i) {
        SchedulerRequest& r = *scheduled[i].request;
        const RequestRunOutput& out = output.requests[i];
        const int num_drafts = scheduled[i].num_drafts();
        const int first_draft_position = r.num_tokens();
        // Drafts' K/V count as computed only once verified (below).
        r.num_computed_tokens += scheduled[i].num_new_tokens - num_drafts;
        if (num_drafts == 0) kv_.commit_computed(r);
        for (int32_t token : out.new_token_ids) r.append_token(token);
        r.spec_token_ids.clear();  // verified, or cut off by the budget: proposed again next step
        if (out.prompt_rows_done) {  // done with every position's logits (prompt_logprobs)
            r.max_tokens_per_step = 0;
            r.reads_prefix_cache = true;
        }
        if (num_drafts > 0 && out.num_accepted_drafts) {
            // The accepted drafts' K/V were computed at their positions by
            // this step; the slots after them hold rejected drafts' K/V,
            // overwritten when those positions are computed for real, and
            // never cached before.
            r.num_computed_tokens = first_draft_position + *out.num_accepted_drafts;
            kv_.commit_computed(r);
        }
    }
}

}  // namespace vllm
