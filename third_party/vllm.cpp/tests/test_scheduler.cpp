// The scheduler with fake requests and no model (vLLM's tests/v1/core
// spirit): how a step's token budget is filled (running first, then waiting
// in policy order, chunked prefill), max_num_seqs, admission without
// overtaking, which request is preempted under each policy and where it
// waits afterwards, prefix-cache adoption and its counters, the lpm policy's
// order, a decode with draft tokens (the speculative-decoding seam) and its
// update (accepted drafts kept, rejected ones given up), and
// requests waiting for a grammar mask (WAITING_FOR_FSM), and an encoder's
// whole-prompt requests (never chunked).
#include <string>
#include <vector>

#include "check.h"
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "fake_requests.h"
#include "util/error.h"

using namespace vllm;

namespace {

constexpr int kBlockSize = 4;

KVCacheManager make_kv(int num_blocks, bool prefix_caching = false) {
    return KVCacheManager(group_layers_by_window({0}), {num_blocks}, kBlockSize, prefix_caching);
}

// "a:10 b:6": each scheduled request's arrival and token count, in batch order.
std::string describe(const SchedulerOutput& batch) {
    std::string out;
    for (const ScheduledRequest& s : batch) {
        if (!out.empty()) out += ' ';
        out += static_cast<char>('a' + s.request->arrival);
        out += ':' + std::to_string(s.num_new_tokens);
    }
    return out;
}

int used_blocks(const KVCacheManager& kv) { return kv.group(0).pool().num_blocks() - kv.group(0).pool().num_free(); }

void test_budget_filling() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 16, kv);
    auto a = fake_request(token_ids(10), 0), b = fake_request(token_ids(10, 20), 1), c = fake_request(token_ids(10, 40), 2);
    scheduler.add(a.get());
    scheduler.add(b.get());
    scheduler.add(c.get());
    SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "a:10 b:6", "step 1: a whole, b's first chunk fills the budget (" + describe(batch) + ")");
    check(scheduler.num_running() == 2 && scheduler.num_waiting() == 1, "c waits");
    complete_step(scheduler, batch);
    batch = scheduler.schedule();
    check(describe(batch) == "a:1 b:4 c:10", "step 2: a decodes, b finishes its prompt, c is admitted (" +
                                                 describe(batch) + ")");
    complete_step(scheduler, batch);
    batch = scheduler.schedule();
    check(describe(batch) == "a:1 b:1 c:1", "step 3: three decodes (" + describe(batch) + ")");
}

void test_chunked_prefill_boundaries() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 16, kv);
    auto r = fake_request(token_ids(40));
    scheduler.add(r.get());
    std::vector<int> chunks, starts;
    bool tables_fit = true;
    for (int step = 0; step < 4; ++step) {
        SchedulerOutput batch = scheduler.schedule();
        if (batch.size() != 1) break;
        chunks.push_back(batch[0].num_new_tokens);
        starts.push_back(r->num_computed_tokens);
        const int blocks = (r->num_computed_tokens + batch[0].num_new_tokens + kBlockSize - 1) / kBlockSize;
        tables_fit = tables_fit && static_cast<int>(kv.block_table(*r, 0).size()) == blocks;
        complete_step(scheduler, batch);
    }
    check(chunks == std::vector<int>({16, 16, 8, 1}), "chunks of 16, 16 and 8, then a decode of 1");
    check(starts == std::vector<int>({0, 16, 32, 40}), "each chunk starts where the last one ended");
    check(tables_fit, "the block table covers exactly the computed tokens and the chunk");
    check(r->num_output_tokens() == 2, "a token after the last chunk and after the decode");
}

void test_max_num_seqs() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 2, 100, kv);
    auto a = fake_request(token_ids(5), 0), b = fake_request(token_ids(5, 10), 1), c = fake_request(token_ids(5, 20), 2);
    for (auto* r : {a.get(), b.get(), c.get()}) scheduler.add(r);
    SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "a:5 b:5", "two sequences at most, budget to spare");
    complete_step(scheduler, batch);
    scheduler.remove(a.get());
    check(a->status == RequestStatus::FINISHED && scheduler.num_running() == 1, "a removed");
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 c:5", "c takes a's place (" + describe(batch) + ")");
    scheduler.remove(b.get());
    scheduler.remove(c.get());
    check(used_blocks(kv) == 0 && scheduler.empty(), "every block back once all are removed");
}

void test_admission_does_not_overtake() {
    // 4 blocks: a takes 3, b needs 2, c would fit in the last one.
    KVCacheManager kv = make_kv(4);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    auto a = fake_request(token_ids(12), 0), b = fake_request(token_ids(8, 20), 1), c = fake_request(token_ids(2, 40), 2);
    for (auto* r : {a.get(), b.get(), c.get()}) scheduler.add(r);
    check(describe(scheduler.schedule()) == "a:12", "b does not fit, and c does not pass it");
    check(scheduler.num_waiting() == 2 && b->status == RequestStatus::WAITING, "b and c wait");
}

// Two 8-token requests in 6 blocks decode until one must give way; returns
// the requests after the first preemption.
struct PreemptionRun {
    std::unique_ptr<SchedulerRequest> first, second;
    SchedulerOutput batch;  // of the step that preempted
};

PreemptionRun run_until_preemption(Scheduler& scheduler, KVCacheManager& kv, int32_t first_priority,
                                   int32_t second_priority) {
    PreemptionRun run{fake_request(token_ids(8), 0, first_priority), fake_request(token_ids(8, 20), 1, second_priority),
                      {}};
    scheduler.add(run.first.get());
    scheduler.add(run.second.get());
    for (int step = 0; step < 20 && scheduler.num_preemptions() == 0; ++step) {
        run.batch = scheduler.schedule();
        complete_step(scheduler, run.batch);
    }
    return run;
}

// Which request gives way under `policy`, and where it waits afterwards.
void test_preemption(SchedulingPolicy policy) {
    const bool by_priority = policy == SchedulingPolicy::PRIORITY;
    const std::string name = by_priority ? "priority: " : "fcfs: ";
    KVCacheManager kv = make_kv(6);
    Scheduler scheduler(policy, 4, 64, kv);
    // a arrives first; under the priority policy its value is the worse (larger) one.
    PreemptionRun run = run_until_preemption(scheduler, kv, by_priority ? 5 : 0, 0);
    SchedulerRequest& victim = by_priority ? *run.first : *run.second;
    SchedulerRequest& survivor = by_priority ? *run.second : *run.first;
    check(scheduler.num_preemptions() == 1, name + "one preemption");
    check(victim.status == RequestStatus::WAITING && victim.num_computed_tokens == 0,
          name + (by_priority ? "the request that runs last by (priority, arrival) is preempted"
                              : "the latest admitted is preempted"));
    check(survivor.status == RequestStatus::RUNNING && run.batch.size() == 1 && run.batch[0].request == &survivor &&
              run.batch[0].num_new_tokens == 1,
          name + "the other goes on alone in that step (" + describe(run.batch) + ")");
    check(used_blocks(kv) == static_cast<int>(kv.block_table(survivor, 0).size()), name + "the victim's blocks are back");
    const int victim_tokens = victim.num_tokens();
    check(victim_tokens > 8, name + "the victim keeps its generated tokens (recomputed as prompt)");
    // A later arrival: fcfs puts the victim back in front of it; priority
    // orders by (priority, arrival), so a more urgent one goes first.
    auto c = fake_request(token_ids(4, 40), 2, by_priority ? -1 : 0);
    scheduler.add(c.get());
    scheduler.remove(&survivor);
    const SchedulerOutput batch = scheduler.schedule();
    const std::string victim_step = std::string(1, static_cast<char>('a' + victim.arrival)) + ":" +
                                    std::to_string(victim_tokens);
    check(describe(batch) == (by_priority ? "c:4 " + victim_step : victim_step + " c:4"),
          name + "admission order after the preemption, recomputing all the victim's tokens (" + describe(batch) + ")");
}

void test_prefix_cache_adoption() {
    KVCacheManager kv = make_kv(32, true);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    auto a = fake_request(token_ids(16), 0);
    scheduler.add(a.get());
    complete_step(scheduler, scheduler.schedule());
    scheduler.remove(a.get());
    check(kv.group(0).pool().num_cached() == 4, "a's 4 full blocks are cached");

    std::vector<int32_t> longer = token_ids(16);
    for (int32_t t : token_ids(4, 30)) longer.push_back(t);
    auto b = fake_request(longer, 1);
    auto c = fake_request(token_ids(16), 2);
    scheduler.add(b.get());
    scheduler.add(c.get());
    SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "b:4 c:4", "b adopts 16 cached tokens, c 12 (its last token is computed) (" +
                                            describe(batch) + ")");
    check(b->num_computed_tokens == 16 && c->num_computed_tokens == 12, "adopted tokens count as computed");
    check(b->num_cached_prompt_tokens == 16 && c->num_cached_prompt_tokens == 12, "the hits are recorded per request");
    check(scheduler.prefix_cache_queries() == 16 + 20 + 16 && scheduler.prefix_cache_hits() == 28,
          "queries count prompt tokens, hits the adopted ones");
    check(kv.block_table(*b, 0)[0] == kv.block_table(*c, 0)[0], "b and c share a's first block");

    // Requests that want every prompt position's logits (prompt_logprobs)
    // adopt none of it, and together compute a bounded chunk a step.
    complete_step(scheduler, batch);
    auto d = fake_request(token_ids(16), 3);
    auto e = fake_request(token_ids(16, 50), 4);
    for (SchedulerRequest* r : {d.get(), e.get()}) {
        r->reads_prefix_cache = false;
        r->max_tokens_per_step = 6;
        scheduler.add(r);
    }
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 c:1 d:6", "d adopts no cached block, 6 tokens a step; e waits (" +
                                                describe(batch) + ")");
    check(d->num_cached_prompt_tokens == 0 && d->num_computed_tokens == 0, "no hit for d");
    complete_step(scheduler, batch);
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 c:1 d:6", "d's next chunk is 6 tokens too (" + describe(batch) + ")");
    complete_step(scheduler, batch);
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 c:1 d:4 e:2", "d's last 4 and e's first 2 share the 6 (" + describe(batch) + ")");
}

void test_whole_prompt_is_never_chunked() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 16, kv);
    auto a = fake_request(token_ids(10), 0), b = fake_request(token_ids(10, 20), 1), c = fake_request(token_ids(4, 40), 2);
    for (SchedulerRequest* r : {a.get(), b.get(), c.get()}) {
        r->whole_prompt = true;
        scheduler.add(r);
    }
    SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "a:10", "b's 10 do not fit the 6 left: it waits, and c does not overtake it (" +
                                         describe(batch) + ")");
    check(scheduler.num_waiting() == 2, "b and c wait");
    complete_step(scheduler, batch);
    scheduler.remove(a.get());
    batch = scheduler.schedule();
    check(describe(batch) == "b:10 c:4", "next step b whole, then c (" + describe(batch) + ")");
}

void test_lpm_order() {
    for (SchedulingPolicy policy : {SchedulingPolicy::FCFS, SchedulingPolicy::LPM}) {
        KVCacheManager kv = make_kv(32, true);
        Scheduler scheduler(policy, 1, 64, kv);
        auto a = fake_request(token_ids(16), 0);
        scheduler.add(a.get());
        complete_step(scheduler, scheduler.schedule());
        scheduler.remove(a.get());
        auto x = fake_request(token_ids(16, 50), 1);  // nothing cached
        std::vector<int32_t> shared = token_ids(16);
        shared.push_back(99);
        auto y = fake_request(shared, 2);  // a's 16 tokens cached
        scheduler.add(x.get());
        scheduler.add(y.get());
        const SchedulerOutput batch = scheduler.schedule();
        const bool lpm = policy == SchedulingPolicy::LPM;
        check(batch.size() == 1 && batch[0].request == (lpm ? y.get() : x.get()),
              lpm ? "lpm admits the longest cached prefix first" : "fcfs admits the earliest arrival");
    }
    // Without prefix caching lpm has nothing to compare: it is fcfs.
    KVCacheManager kv = make_kv(32, false);
    Scheduler scheduler(SchedulingPolicy::LPM, 1, 64, kv);
    auto x = fake_request(token_ids(8), 0), y = fake_request(token_ids(8, 20), 1);
    scheduler.add(x.get());
    scheduler.add(y.get());
    check(describe(scheduler.schedule()) == "a:8", "lpm without a prefix cache admits in arrival order");
}

void test_draft_tokens_are_scheduled() {
    KVCacheManager kv = make_kv(32);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    auto r = fake_request(token_ids(6));
    scheduler.add(r.get());
    complete_step(scheduler, scheduler.schedule());
    r->spec_token_ids = {11, 12, 13};
    const SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "a:4", "a decode with 3 drafts schedules 4 tokens (" + describe(batch) + ")");
    check(kv.block_table(*r, 0).size() == 3, "blocks for the drafts' K/V too (11 tokens)");
    // The target accepts the first draft and replaces the second with its
    // own token: the update appends both and counts as computed only the
    // request's last token and the accepted draft (vLLM's rewind).
    ModelRunnerOutput output;
    output.requests.push_back(RequestRunOutput{{11, 20}, 1});
    scheduler.update_from_output(batch, output);
    check(r->num_tokens() == 9 && r->tokens()[7] == 11 && r->tokens()[8] == 20, "accepted draft and target token appended");
    check(r->num_computed_tokens == 8 && r->spec_token_ids.empty(), "computed up to the accepted draft; drafts consumed");
    SchedulerOutput next = scheduler.schedule();
    check(describe(next) == "a:1", "next step computes the target's token alone (" + describe(next) + ")");
    complete_step(scheduler, next);
    // Drafts whose verification failed (the request then ends with the
    // error) count nothing past the request's last token.
    r->spec_token_ids = {11, 12};
    next = scheduler.schedule();
    scheduler.update_from_output(next, ModelRunnerOutput{{RequestRunOutput{}}});
    check(r->num_tokens() == 10 && r->num_computed_tokens == 10 && r->spec_token_ids.empty(),
          "a failed verification: its drafts' K/V are not counted");
}

// vLLM's WAITING_FOR_FSM: a request whose grammar mask is being computed
// off the loop is passed over, waiting or running, without holding up the
// others (a waiting one does not block admission behind it), and keeps its
// blocks and place; cleared, it is scheduled again.
void test_waiting_for_grammar() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    auto a = fake_request(token_ids(6), 0), b = fake_request(token_ids(6, 20), 1);
    auto c = fake_request(token_ids(6, 40), 2);
    a->waiting_for_grammar = true;
    scheduler.add(a.get());
    scheduler.add(b.get());
    SchedulerOutput batch = scheduler.schedule();
    check(describe(batch) == "b:6", "a waits for its grammar; b, behind it, is admitted (" + describe(batch) + ")");
    check(scheduler.num_waiting() == 1 && a->status == RequestStatus::WAITING, "a is still waiting, in front");
    complete_step(scheduler, batch);
    a->waiting_for_grammar = false;
    scheduler.add(c.get());
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 a:6 c:6", "ready, a is admitted before c (" + describe(batch) + ")");
    complete_step(scheduler, batch);
    const int blocks = used_blocks(kv);
    b->waiting_for_grammar = true;
    batch = scheduler.schedule();
    check(describe(batch) == "a:1 c:1", "running b waiting for a mask sits out the step (" + describe(batch) + ")");
    check(b->status == RequestStatus::RUNNING && used_blocks(kv) == blocks, "b keeps its place and its blocks");
    complete_step(scheduler, batch);
    b->waiting_for_grammar = false;
    batch = scheduler.schedule();
    check(describe(batch) == "b:1 a:1 c:1", "its mask ready, b decodes again (" + describe(batch) + ")");
    a->waiting_for_grammar = b->waiting_for_grammar = c->waiting_for_grammar = true;
    check(scheduler.schedule().empty(), "all waiting for masks: an empty step (the engine idles until one is ready)");
}

void test_bad_policy_name() {
    bool refused = false;
    try {
        parse_scheduling_policy("sjf");
    } catch (const Error& e) {
        refused = e.status() == VLLM_ERR_INVALID_ARGUMENT && std::string(e.what()).find("sjf") != std::string::npos;
    }
    check(refused, "an unknown policy is refused by name");
}

}  // namespace

int main() {
    test_budget_filling();
    test_chunked_prefill_boundaries();
    test_max_num_seqs();
    test_admission_does_not_overtake();
    test_preemption(SchedulingPolicy::FCFS);
    test_preemption(SchedulingPolicy::PRIORITY);
    test_prefix_cache_adoption();
    test_lpm_order();
    test_whole_prompt_is_never_chunked();
    test_draft_tokens_are_scheduled();
    test_waiting_for_grammar();
    test_bad_policy_name();
    return report();
}
