// KV cache groups without a model: fake requests walked through the block
// bookkeeping of a hybrid model (a full-attention group and a sliding-window
// group, window 8, blocks of 4 tokens) as the engine step drives it.
// Checked: a sliding group's blocks are given back as the window moves
// (mid-prefill, with chunks longer than the window, and mid-decode) and
// replaced by kNullBlock, never inside a future query's window; the
// prefix-cache hit rules (a full group needs every block of the hit, a
// sliding one the run of blocks before its end, searched from the right;
// a hit is usable only when every group supplies it); adopted hits; and
// every block coming back on finish and on preemption.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "core/scheduler_request.h"
#include "engine/kv_cache_plan.h"
#include "util/error.h"
#include "check.h"
#include "fake_requests.h"

using namespace vllm;

namespace {

constexpr int kBlockSize = 4;
constexpr int kWindow = 8;

std::vector<KVCacheGroupSpec> hybrid_groups() { return group_layers_by_window({0, kWindow, kWindow, 0}); }

int used(const KVCacheManager& kv, int g) { return kv.group(g).pool().num_blocks() - kv.group(g).pool().num_free(); }

int non_null(const std::vector<int32_t>& table) {
    int n = 0;
    for (int32_t b : table) n += b != kNullBlock;
    return n;
}

// The next query of `r` (at num_computed_tokens) reads positions
// [num_computed - window + 1, num_computed] of a sliding group and
// everything of a full one: none of it may be null.
bool window_intact(const KVCacheManager& kv, const SchedulerRequest& r) {
    for (int g = 0; g < kv.num_groups(); ++g) {
        const std::vector<int32_t>& table = kv.block_table(r, g);
        const int window = kv.group(g).spec().sliding_window;
        const int first = window > 0 ? std::max(0, r.num_computed_tokens - window + 1) : 0;
        for (int p = first; p < r.num_computed_tokens; ++p)
            if (table[p / kBlockSize] == kNullBlock) return false;
        if (window == 0 && non_null(table) != static_cast<int>(table.size())) return false;
    }
    return true;
}

// One engine step for `r` alone: room for n tokens, then the scheduler's
// update (computed, committed; a token appended when the request reached
// its end, a decode).
bool run_step(Scheduler& scheduler, KVCacheManager& kv, SchedulerRequest& r, int n) {
    if (!kv.allocate(r, n)) return false;
    complete_step(scheduler, SchedulerOutput{{{&r, n}}}, 3 + r.num_tokens() % 26);
    return true;
}

void test_grouping() {
    std::vector<KVCacheGroupSpec> g = hybrid_groups();
    check(g.size() == 2 && !g[0].is_sliding() && g[0].layers == std::vector<int>({0, 3}) &&
              g[1].sliding_window == kWindow && g[1].layers == std::vector<int>({1, 2}),
          "layers grouped by window, full attention first");
    check(group_layers_by_window({0, 0, 0}).size() == 1, "no sliding layer: one group");
    bool refused = false;
    try {
        group_layers_by_window({0, 4, 8});
    } catch (const Error&) {
        refused = true;
    }
    check(refused, "two different windows are refused");
    // window 8 (7 keys back), chunk 16: ceil(23 / 4) + 1
    check(KVCacheGroup::blocks_per_sequence(8, 16, 4) == 7, "blocks per sequence of a sliding group");
}

void test_window_frees_blocks() {
    KVCacheManager kv(hybrid_groups(), {64, 64}, kBlockSize, false);
    Scheduler scheduler(SchedulingPolicy::FCFS, 1, 64, kv);  // its update_from_output, as the engine steps
    auto r = fake_request(token_ids(40));
    // A 12-token chunk, then one of 20 (longer than the window), then decodes.
    check(run_step(scheduler, kv, *r, 12), "first chunk allocated");
    check(kv.block_table(*r, 1)[0] == kNullBlock && non_null(kv.block_table(*r, 1)) == 2,
          "after 12 tokens the sliding group keeps blocks 1-2 (positions 5.. are still read)");
    check(used(kv, 0) == 3 && used(kv, 1) == 2, "the full group keeps all 3 blocks, the sliding one gave one back");
    check(window_intact(kv, *r), "window intact after the first chunk");
    check(run_step(scheduler, kv, *r, 20), "a chunk longer than the window");
    check(kv.block_table(*r, 1).size() == 8 && non_null(kv.block_table(*r, 1)) == 2 && used(kv, 1) == 2,
          "after 32 tokens only the 2 blocks of the window stay");
    check(used(kv, 0) == 8, "the full group holds 8 blocks");
    check(window_intact(kv, *r), "window intact after the long chunk");
    check(run_step(scheduler, kv, *r, 8), "the prompt's last chunk");
    int peak = 0;
    bool intact = true;
    for (int step = 0; step < 40; ++step) {
        const int n = r->num_tokens() - r->num_computed_tokens;
        if (!kv.allocate(*r, n)) break;
        peak = std::max(peak, used(kv, 1));
        complete_step(scheduler, SchedulerOutput{{{r.get(), n}}}, 5);
        intact = intact && window_intact(kv, *r);
    }
    check(r->num_computed_tokens == 80, "40 decode steps");
    check(intact, "no decode step's window holds a null entry");
    check(peak <= KVCacheGroup::blocks_per_sequence(kWindow, 8, kBlockSize) && peak <= 4,
          "decode holds at most the window's blocks plus one (peak " + std::to_string(peak) + ")");
    check(used(kv, 0) == 20, "the full group holds every block of 80 tokens");
    kv.free(*r);
    check(used(kv, 0) == 0 && used(kv, 1) == 0, "finishing gives every block back in both groups");
}

void test_group_hit_rules() {
    // Block contents cached at chosen indices of one chain.
    const std::vector<int32_t> t = token_ids(44);
    std::vector<uint64_t> hashes;
    extend_block_hashes(hashes, t, kBlockSize);
    const BlockHashChain chain(t, hashes, kBlockSize);
    auto hit_with_cached = [&](int window, const std::vector<int>& cached, std::vector<int32_t>& blocks) {
        KVCacheGroup group({window, {0}}, 32, kBlockSize);
        std::vector<int32_t> held;
        for (int i : cached) {
            const int32_t b = group.pool().allocate();
            group.pool().cache(b, chain.key(i));
            held.push_back(b);
        }
        group.pool().release(held);  // cached, free
        return group.find_longest_hit(chain, 10, blocks);
    };
    std::vector<int32_t> blocks;
    check(hit_with_cached(0, {0, 1, 2, 5}, blocks) == 3 && blocks.size() == 3, "full group: the prefix up to a miss");
    check(hit_with_cached(kWindow, {0, 1, 2, 5, 6, 9}, blocks) == 7 && blocks.size() == 7 &&
              non_null(blocks) == 2 && blocks[5] != kNullBlock && blocks[6] != kNullBlock,
          "sliding group: the rightmost run of 2 blocks (5-6) ends the hit; the rest is null");
    check(hit_with_cached(kWindow, {0, 1, 2}, blocks) == 3 && blocks[0] == kNullBlock, "sliding group: run 1-2");
    check(hit_with_cached(kWindow, {0}, blocks) == 1 && blocks[0] != kNullBlock,
          "sliding group: a run from block 0 shorter than the window still serves");
    check(hit_with_cached(kWindow, {1, 3, 5, 7, 9}, blocks) == 0 && blocks.empty(), "sliding group: no run, no hit");
}

void test_hybrid_prefix_hits() {
    // A sliding pool of 6 blocks: a finished request leaves only its last
    // 6 sliding blocks cached, the full pool keeps them all.
    KVCacheManager kv(hybrid_groups(), {64, 6}, kBlockSize, true);
    Scheduler scheduler(SchedulingPolicy::FCFS, 1, 64, kv);  // its update_from_output, as the engine steps
    auto a = fake_request(token_ids(40));
    for (int i = 0; i < 10; ++i) check(run_step(scheduler, kv, *a, 4), "request A chunk " + std::to_string(i));
    kv.free(*a);
    check(kv.group(0).pool().num_cached() == 10 && kv.group(1).pool().num_cached() == 6,
          "A's blocks cached: 10 full, the last 6 sliding");

    auto b = fake_request(token_ids(44));  // A's 40 tokens and 4 more
    CachedPrefix hit = kv.find_cached_prefix(*b);
    check(hit.num_tokens == 40 && hit.blocks[0].size() == 10 && non_null(hit.blocks[1]) == 2,
          "a hit longer than the window: every full block, the sliding window's 2");
    std::vector<int32_t> d_prompt = token_ids(24);
    for (int i = 0; i < 10; ++i) d_prompt.push_back(28);
    check(kv.find_cached_prefix(*fake_request(d_prompt)).num_tokens == 24, "a 24-token shared start hits 24");
    std::vector<int32_t> e_prompt = token_ids(12);
    for (int i = 0; i < 10; ++i) e_prompt.push_back(28);
    check(kv.find_cached_prefix(*fake_request(e_prompt)).num_tokens == 0,
          "the full group has 12 tokens but the sliding blocks before them were evicted: no hit");

    check(kv.allocate(*b, 4, hit), "B adopts the hit");
    check(b->num_computed_tokens == 40 && kv.block_table(*b, 1)[0] == kNullBlock && window_intact(kv, *b),
          "B starts at 40 with null sliding entries before the window");
    check(used(kv, 0) == 11 && used(kv, 1) == 3, "B holds 10 + 1 full blocks, 2 + 1 sliding");
    complete_step(scheduler, SchedulerOutput{{{b.get(), 4}}});
    check(used(kv, 1) == 2, "B's window moved: one adopted sliding block given back");
    kv.free(*b);
    check(used(kv, 0) == 0 && used(kv, 1) == 0, "B's blocks all back");
    check(kv.find_cached_prefix(*fake_request(token_ids(48))).num_tokens == 44, "B's last block is cached in both groups");
}

void test_preemption_frees_both_groups() {
    // Full group: 12 blocks (48 tokens) for two requests that grow past it.
    KVCacheManager kv(hybrid_groups(), {12, 12}, kBlockSize, false);
    Scheduler scheduler(SchedulingPolicy::FCFS, 2, 64, kv);
    auto r1 = fake_request(token_ids(20), 1);
    auto r2 = fake_request(token_ids(20, 5), 2);
    scheduler.add(r1.get());
    scheduler.add(r2.get());
    bool intact = true;
    for (int step = 0; step < 12 && scheduler.num_preemptions() == 0; ++step) {
        const SchedulerOutput batch = scheduler.schedule();
        complete_step(scheduler, batch);
        for (const ScheduledRequest& s : batch) intact = intact && window_intact(kv, *s.request);
    }
    check(scheduler.num_preemptions() == 1 && r2->num_computed_tokens == 0, "the later request is preempted");
    check(intact, "windows intact while both ran");
    check(used(kv, 0) == static_cast<int>(kv.block_table(*r1, 0).size()) &&
              used(kv, 1) == non_null(kv.block_table(*r1, 1)) && used(kv, 1) <= 4,
          "after preemption only r1's blocks are held, in both groups");
    scheduler.remove(r1.get());
    check(used(kv, 0) == 0 && used(kv, 1) == 0, "removing r1 gives everything back");
}

void test_full_only_model_unchanged() {
    // One group: no null entries, every block kept, hits from the left.
    KVCacheManager kv(group_layers_by_window({0, 0}), {32}, kBlockSize, true);
    Scheduler scheduler(SchedulingPolicy::FCFS, 1, 64, kv);  // its update_from_output, as the engine steps
    auto a = fake_request(token_ids(30));
    check(run_step(scheduler, kv, *a, 30), "one 30-token chunk");
    check(non_null(kv.block_table(*a, 0)) == 8 && used(kv, 0) == 8, "all 8 blocks kept");
    kv.free(*a);
    check(kv.find_cached_prefix(*fake_request(token_ids(30))).num_tokens == 28, "the hit stops before the last token");
}

// The budget pays for each layer's own KV shape (kv_layer_shape.h): a
// model whose layers keep less (K only, or nothing) gets as many more
// blocks from the same memory.
void test_plan_counts_layer_shapes() {
    ModelConfig model;
    model.n_layers = 4;
    model.n_heads = 4;
    model.n_kv_heads = 2;
    model.head_dim = 8;
    EngineConfig config;
    config.block_size = kBlockSize;
    config.kv_dtype = KvDtype::F32;
    config.max_num_seqs = 1000;
    config.kv_cache_memory_bytes = int64_t(1) << 20;
    const int max_model_len = 64;
    const int uniform = plan_kv_cache(model, config, max_model_len).group_blocks[0];
    // 4 layers x K and V x 2 heads x 8 floats x 4 tokens.
    check(uniform == (1 << 20) / (4 * 2 * 2 * 8 * 4 * 4), "uniform layers: the budget over K and V of every layer");
    model.layer_kv_shapes = {{2, 8, 8}, {1, 12, 0}, {0, 0, 0}, {2, 8, 8}};
    const int shaped = plan_kv_cache(model, config, max_model_len).group_blocks[0];
    check(shaped == (1 << 20) / ((2 * 2 * 8 + 12 + 0 + 2 * 2 * 8) * 4 * 4),
          "per-layer shapes: the budget over what each layer keeps");
}

}  // namespace

int main() {
    test_grouping();
    test_window_frees_blocks();
    test_group_hit_rules();
    test_hybrid_prefix_hits();
    test_preemption_frees_both_groups();
    test_full_only_model_unchanged();
    test_plan_counts_layer_shapes();
    return report();
}
