// The recurrent-state KV cache group (core/kv_cache_group.h) without a
// model: fake requests of a Qwen3.5-like layer pattern (linear, full,
// linear, full) walked through the scheduler and KV cache manager. Checked:
// the grouping (full attention first, the recurrent group after it); a
// request holds exactly one state block from its first step to its end,
// whatever its length and chunking; the block comes back when it finishes
// and when it is preempted, and a preempted request gets one again on
// resumption; a recurrent group supplies no prefix-cache hit and records
// nothing in the prefix cache; too few state slots make a request wait.
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "fake_requests.h"

using namespace vllm;
using vllm_test::check;
using vllm_test::complete_step;
using vllm_test::fake_request;
using vllm_test::token_ids;

namespace {

constexpr int kBlockSize = 4;

std::vector<KVCacheGroupSpec> qwen35_groups() {
    return group_layers_by_window({0, 0, 0, 0}, {true, false, true, false}, 1000);
}

int used(const KVCacheManager& kv, int g) { return kv.group(g).pool().num_blocks() - kv.group(g).pool().num_free(); }

void test_grouping() {
    const std::vector<KVCacheGroupSpec> groups = qwen35_groups();
    check(groups.size() == 2 && !groups[0].recurrent && groups[0].layers == std::vector<int>{1, 3},
          "full attention first, layers 1 and 3");
    check(groups[1].recurrent && groups[1].layers == std::vector<int>{0, 2} && groups[1].state_bytes == 1000 &&
              std::string(groups[1].kind_name()) == "recurrent_state",
          "the recurrent group: layers 0 and 2, its state bytes, its kind's name");
    bool refused = false;
    try {
        group_layers_by_window({0, 8, 0}, {true, false, false});
    } catch (const std::exception&) {
        refused = true;
    }
    check(refused, "full, sliding and recurrent: three groups refused");
}

void test_one_slot_per_request() {
    KVCacheManager kv(qwen35_groups(), {64, 4}, kBlockSize, /*enable_prefix_caching=*/true);
    Scheduler scheduler(SchedulingPolicy::FCFS, 4, 8, kv);  // chunks of at most 8 tokens
    auto a = fake_request(token_ids(30), 1);
    scheduler.add(a.get());
    bool one = true;
    for (int step = 0; step < 10; ++step) {
        const SchedulerOutput batch = scheduler.schedule();
        complete_step(scheduler, batch);
        one = one && kv.block_table(*a, 1).size() == 1 && used(kv, 1) == 1;
    }
    check(one, "one state block through chunked prefill and decode");
    check(a->num_computed_tokens >= 30, "the request ran");
    const int32_t slot = kv.block_table(*a, 1)[0];
    scheduler.remove(a.get());
    check(used(kv, 0) == 0 && used(kv, 1) == 0, "finishing gives the state block back");
    // No hit from the recurrent group, so none at all, though the full
    // group cached A's blocks.
    check(kv.find_cached_prefix(*fake_request(token_ids(30))).num_tokens == 0,
          "no prefix-cache hit: the recurrent group supplies none");
    check(kv.group(1).pool().num_cached() == 0, "nothing of the recurrent group in the prefix cache");
    (void)slot;
}

void test_preemption_and_waiting() {
    // Two state slots for three requests: the third waits for one.
    KVCacheManager kv(qwen35_groups(), {64, 2}, kBlockSize, false);
    Scheduler scheduler(SchedulingPolicy::FCFS, 3, 64, kv);
    auto r1 = fake_request(token_ids(5), 1), r2 = fake_request(token_ids(5, 9), 2), r3 = fake_request(token_ids(5, 20), 3);
    for (auto* r : {r1.get(), r2.get(), r3.get()}) scheduler.add(r);
    const SchedulerOutput first = scheduler.schedule();
    check(first.size() == 2 && used(kv, 1) == 2, "two requests run, one state slot each; the third waits");
    complete_step(scheduler, first);
    scheduler.remove(r1.get());
    check(used(kv, 1) == 1, "r1's slot back");
    const SchedulerOutput second = scheduler.schedule();
    bool r3_runs = false;
    for (const ScheduledRequest& s : second) r3_runs = r3_runs || s.request == r3.get();
    check(r3_runs && used(kv, 1) == 2, "r3 takes the freed slot");
    complete_step(scheduler, second);

    // Preemption: full-attention blocks run out as two requests grow.
    KVCacheManager small(qwen35_groups(), {8, 2}, kBlockSize, false);
    Scheduler sched(SchedulingPolicy::FCFS, 2, 64, small);
    auto p1 = fake_request(token_ids(12), 1), p2 = fake_request(token_ids(12, 5), 2);
    sched.add(p1.get());
    sched.add(p2.get());
    for (int step = 0; step < 12 && sched.num_preemptions() == 0; ++step) complete_step(sched, sched.schedule());
    check(sched.num_preemptions() == 1 && p2->num_computed_tokens == 0, "the later request is preempted");
    check(used(small, 1) == 1, "its state slot went back with its blocks");
    sched.remove(p1.get());
    const SchedulerOutput resumed = sched.schedule();
    check(resumed.size() == 1 && resumed[0].request == p2.get() && resumed[0].request->num_computed_tokens == 0 &&
              small.block_table(*p2, 1).size() == 1,
          "resumed from its first token, with a state slot again");
}

}  // namespace

int main() {
    test_grouping();
    test_one_slot_per_request();
    test_preemption_and_waiting();
    return vllm_test::report();
}
