// The block pool and the KV cache manager's prefix cache with fake requests
// and no model: allocation order, reference counts, the free queue as the
// prefix cache's LRU (which cached block is evicted first), hits along the
// hash chain (a hit needs every block before it to match), blocks shared by
// requests, and an allocation that does not fit leaving everything as it
// was.
#include <algorithm>
#include <string>
#include <vector>

#include "check.h"
#include "core/block_hash_chain.h"
#include "core/block_pool.h"
#include "core/kv_cache_manager.h"
#include "fake_requests.h"
#include "util/error.h"

using namespace vllm;

namespace {

constexpr int kBlockSize = 4;

bool throws(void (*f)(BlockPool&), BlockPool& pool) {
    try {
        f(pool);
    } catch (const Error&) {
        return true;
    }
    return false;
}

void test_allocation_and_ref_counts() {
    BlockPool pool(4, kBlockSize);
    check(pool.num_free() == 4 && pool.num_cached() == 0, "a new pool: every block free, none cached");
    const int32_t b0 = pool.allocate(), b1 = pool.allocate();
    check(b0 == 0 && b1 == 1 && pool.num_free() == 2, "blocks are handed out in id order at first");
    pool.touch(b0);  // a second holder
    pool.release({b0});
    check(!pool.is_free(b0) && pool.num_free() == 2, "a block still referenced stays out of the free queue");
    pool.release({b0, b1});
    check(pool.is_free(b0) && pool.is_free(b1) && pool.num_free() == 4, "the last release frees it");
    check(throws([](BlockPool& p) { p.release({0}); }, pool), "releasing a free block is refused");
    pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate();
    check(pool.allocate() == -1 && pool.num_free() == 0, "an exhausted pool gives -1");
}

void test_free_order_is_the_lru() {
    BlockPool pool(4, kBlockSize);
    std::vector<int32_t> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate());
    // Freed in the order 2, 0, 3, 1: allocation takes them back in that order.
    pool.release({2, 0});
    pool.release({3, 1});
    std::vector<int32_t> order;
    for (int i = 0; i < 4; ++i) order.push_back(pool.allocate());
    check(order == std::vector<int32_t>({2, 0, 3, 1}), "the least recently freed block is taken first");
}

// A sequence of n tokens with its blocks' hashes and their chain.
struct HashedTokens {
    explicit HashedTokens(int n) : tokens(token_ids(n)) { extend_block_hashes(hashes, tokens, kBlockSize); }
    std::vector<int32_t> tokens;
    std::vector<uint64_t> hashes;
    BlockHashChain chain() const { return BlockHashChain(tokens, hashes, kBlockSize); }
};

void test_cached_blocks_and_eviction() {
    const HashedTokens sequence(12);
    const BlockHashChain chain = sequence.chain();
    BlockPool pool(3, kBlockSize);
    std::vector<int32_t> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(pool.allocate());
        pool.cache(held[i], chain.key(i));
    }
    check(pool.num_cached() == 3, "three full blocks cached");
    check(pool.find_cached(chain.key(1)) == held[1], "found by key");
    pool.cache(held[0], chain.key(2));
    check(pool.find_cached(chain.key(2)) == held[2], "a block already cached keeps its key");
    // Freed tail first, as a finished request frees: the head is evicted last.
    pool.release({held[2], held[1], held[0]});
    check(pool.num_cached() == 3 && pool.num_free() == 3, "free blocks stay cached");
    // A hit takes a cached free block out of the queue without evicting it.
    pool.touch(held[1]);
    check(!pool.is_free(held[1]) && pool.num_free() == 2, "a hit leaves the free queue");
    const int32_t fresh = pool.allocate();
    check(fresh == held[2] && pool.find_cached(chain.key(2)) == -1 && pool.num_cached() == 2,
          "allocation evicts the least recently freed cached block (the tail)");
    check(pool.find_cached(chain.key(0)) == held[0], "the head is still cached");
}

// KV cache events (core/kv_cache_events.h): nothing without a sink; with
// one, each newly cached block is Stored (its key's hashes and tokens) and
// each cached block allocation evicts is Removed, in order.
void test_events_record_stores_and_evictions() {
    const HashedTokens sequence(8);
    const std::vector<int32_t>& tokens = sequence.tokens;
    const std::vector<uint64_t>& hashes = sequence.hashes;
    const BlockHashChain chain = sequence.chain();
    BlockPool pool(2, kBlockSize);
    const int32_t quiet = pool.allocate();
    pool.cache(quiet, chain.key(0));
    pool.release({quiet});
    KvCacheEventSink sink;
    pool.record_events(&sink, 1);
    const int32_t b1 = pool.allocate();  // the never-cached block: nothing evicted
    pool.cache(b1, chain.key(1));
    pool.cache(b1, chain.key(1));  // already cached: no second event
    check(sink.size() == 1 && sink[0].kind == KvCacheEvent::Kind::Stored && sink[0].group == 1 &&
              sink[0].hash == hashes[1] && sink[0].parent_hash == hashes[0] &&
              sink[0].tokens == std::vector<int32_t>(tokens.begin() + 4, tokens.end()),
          "a newly cached block is Stored with its hashes and tokens");
    const int32_t reused = pool.allocate();  // evicts block 0's content
    check(reused == quiet && sink.size() == 2 && sink[1].kind == KvCacheEvent::Kind::Removed &&
              sink[1].hash == hashes[0] && sink[1].group == 1,
          "evicting a cached block is Removed");
    pool.record_events(nullptr, 0);
    pool.release({reused, b1});
    pool.allocate();
    check(sink.size() == 2, "no events once the sink is detached");
}

void test_chain_names_prefixes() {
    const std::vector<int32_t> a = token_ids(12);
    std::vector<int32_t> b = a;
    b[5] = 99;  // block 1 differs
    std::vector<uint64_t> ha, hb;
    extend_block_hashes(ha, a, kBlockSize);
    extend_block_hashes(hb, b, kBlockSize);
    check(ha.size() == 3 && ha[0] == hb[0], "equal first blocks: equal hashes");
    check(ha[1] != hb[1], "a changed token changes its block's hash");
    check(std::equal(a.begin() + 8, a.end(), b.begin() + 8) && ha[2] != hb[2],
          "equal tokens after a different block: a different hash (the chain)");
    std::vector<int32_t> grown = token_ids(11);
    std::vector<uint64_t> hg;
    extend_block_hashes(hg, grown, kBlockSize);
    check(hg.size() == 2, "only full blocks are named");
    const uint64_t first = hg[0];
    grown.push_back(14);  // fills block 2 (token_ids(12)'s last id)
    extend_block_hashes(hg, grown, kBlockSize);
    check(hg.size() == 3 && hg[0] == first && hg == ha, "extending hashes only the new block, to the same chain");
    // The pool verifies a hit: a key with the right hash but other tokens misses.
    BlockPool pool(2, kBlockSize);
    const BlockHashChain chain(a, ha, kBlockSize);
    const int32_t block = pool.allocate();
    pool.cache(block, chain.key(0));
    BlockKey forged = chain.key(0);
    forged.tokens = b.data() + 4;
    check(pool.find_cached(chain.key(0)) == block && pool.find_cached(forged) == -1,
          "a hash collision is a miss, not another block's K/V");
}

void test_manager_hits_and_sharing() {
    KVCacheManager kv(group_layers_by_window({0}), {8}, kBlockSize, true);
    auto a = fake_request(token_ids(16), 0);
    check(kv.allocate(*a, 16), "a's 4 blocks");
    a->num_computed_tokens = 16;
    kv.commit_computed(*a);
    const std::vector<int32_t> a_blocks = kv.block_table(*a, 0);

    // A prompt that differs in block 2: the hit stops before it.
    std::vector<int32_t> diverging = token_ids(16);
    diverging[9] = 99;
    auto b = fake_request(diverging, 1);
    check(kv.find_cached_prefix(*b).num_tokens == 8, "the hit stops at the first different block");
    // Sharing: b adopts a's first two blocks while a still holds them.
    CachedPrefix hit = kv.find_cached_prefix(*b);
    check(kv.allocate(*b, 8, hit) && b->num_computed_tokens == 8, "b adopts 8 tokens and allocates 2 blocks");
    check(kv.block_table(*b, 0)[0] == a_blocks[0] && kv.block_table(*b, 0)[1] == a_blocks[1] &&
              kv.block_table(*b, 0)[2] != a_blocks[2],
          "shared head, own tail");
    check(kv.group(0).pool().num_free() == 2, "8 blocks: 4 of a, 2 new of b, 2 free");
    kv.free(*a);
    check(kv.group(0).pool().num_free() == 4 && !kv.group(0).pool().is_free(a_blocks[0]),
          "a's shared blocks stay held by b; its own tail is freed");

    // Too little room: refused, nothing changed.
    auto c = fake_request(token_ids(40, 100), 2);
    const int free_before = kv.group(0).pool().num_free();
    check(!kv.allocate(*c, 40), "40 tokens do not fit in 4 free blocks");
    check(kv.group(0).pool().num_free() == free_before && kv.group(0).pool().num_cached() == 4,
          "a refused allocation takes nothing and evicts nothing");
    kv.free(*b);
    check(kv.group(0).pool().num_free() == 8, "everything back");
}

void test_hit_ends_before_the_last_token() {
    KVCacheManager kv(group_layers_by_window({0}), {8}, kBlockSize, true);
    auto a = fake_request(token_ids(8), 0);
    kv.allocate(*a, 8);
    a->num_computed_tokens = 8;
    kv.commit_computed(*a);
    kv.free(*a);
    check(kv.find_cached_prefix(*fake_request(token_ids(8), 1)).num_tokens == 4,
          "a prompt equal to a cached one recomputes its last block (its last token needs logits)");
    check(kv.find_cached_prefix(*fake_request(token_ids(9), 2)).num_tokens == 8, "one token more: both blocks hit");
    KVCacheManager off(group_layers_by_window({0}), {8}, kBlockSize, false);
    check(off.find_cached_prefix(*fake_request(token_ids(9), 3)).num_tokens == 0, "no prefix cache, no hit");
}

}  // namespace

int main() {
    test_allocation_and_ref_counts();
    test_free_order_is_the_lru();
    test_cached_blocks_and_eviction();
    test_events_record_stores_and_evictions();
    test_chain_names_prefixes();
    test_manager_hits_and_sharing();
    test_hit_ends_before_the_last_token();
    return report();
}
