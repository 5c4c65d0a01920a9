// Unit test of the paged attention kernel: against a direct float
// computation, and split-key partials merged (flash-decoding) against the
// whole tile, for every ISA build the machine runs (VLLM_CPP_ISA selects);
// a sliding window over blocks freed before it reads none of them;
// attention sinks in the tile and through the merge; and of
// silu_mul, from the same per-ISA ops build. Caches of floats, halves and
// int8 (written and read back through KVCache, whose int8 rows are checked
// against their bound first).
// Prints "N passed, M failed".
// `test_attention --bench [context [tokens]]` instead times attention per
// KV cache type (bench_attention below).
#include <sys/mman.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dtype/half.h"
#include "kernels/cpu/ops.h"
#include "kv_cache/kv_cache.h"
#include "check.h"

using namespace vllm::kernels;
using vllm::KvDtype;

namespace {

// A check that reports the measured value with its name.
void check(bool ok, const char* what, double value) {
    char text[64];
    std::snprintf(text, sizeof text, " (%g)", value);
    vllm_test::check(ok, what + std::string(text));
}

struct Fixture {
    int n_heads, n_kv_heads, head_dim, block_size, num_blocks;
    KvDtype dtype;
    int window = 0;        // PagedAttention::window
    float softcap = 0.0f;  // PagedAttention::softcap
    std::vector<float> sinks;  // PagedAttention::sinks (per query head); empty: none
    // The caches as floats (for f16 and int8, the values the cache holds
    // exactly), and for f16 and int8 the KVCache the kernel reads.
    std::vector<float> q, keys, values;
    std::unique_ptr<vllm::KVCache> cache;
    std::vector<int32_t> table, positions;

    // Blocks of a multiple of 16 slots are read whole; smaller ones gathered.
    Fixture(int n_tokens, int first_pos, int block_size_ = 16, KvDtype dtype_ = KvDtype::F32, int n_heads_ = 9,
            int n_kv_heads_ = 3, int head_dim_ = 64)
        : n_heads(n_heads_), n_kv_heads(n_kv_heads_), head_dim(head_dim_), block_size(block_size_),
          num_blocks(640 / block_size_), dtype(dtype_) {
        std::mt19937 rng(7);
        std::normal_distribution<float> normal;
        q.resize(size_t(n_tokens) * n_heads * head_dim);
        keys.resize(size_t(num_blocks) * block_size * n_kv_heads * head_dim);
        values.resize(keys.size());
        for (float& x : q) x = normal(rng);
        for (float& x : keys) x = normal(rng);
        for (float& x : values) x = normal(rng);
        if (dtype != KvDtype::F32) {
            // Every slot through the KV cache, and the floats it reads back as the reference's.
            cache = std::make_unique<vllm::KVCache>(std::vector<vllm::KVCacheGroupSpec>{{0, {0}}},
                                                    std::vector<int>{num_blocks}, n_kv_heads, head_dim, block_size,
                                                    dtype);
            // A slot's K or V (head-major, as the cache takes it) in and out.
            std::vector<float> row(size_t(n_kv_heads) * head_dim);
            using Element = float& (Fixture::*)(int, int, int, int);
            auto round_trip = [&](int b, int slot, Element at,
                                  void (vllm::KVCache::*store)(int, int32_t, int, const float*),
                                  void (vllm::KVCache::*read)(int, int32_t, int, float*) const) {
                for (int h = 0; h < n_kv_heads; ++h)
                    for (int d = 0; d < head_dim; ++d) row[size_t(h) * head_dim + d] = (this->*at)(b, slot, h, d);
                ((*cache).*store)(0, b, slot, row.data());
                ((*cache).*read)(0, b, slot, row.data());
                for (int h = 0; h < n_kv_heads; ++h)
                    for (int d = 0; d < head_dim; ++d) (this->*at)(b, slot, h, d) = row[size_t(h) * head_dim + d];
            };
            for (int b = 0; b < num_blocks; ++b)
                for (int slot = 0; slot < block_size; ++slot) {
                    round_trip(b, slot, &Fixture::key_at, &vllm::KVCache::store_key, &vllm::KVCache::read_key);
                    round_trip(b, slot, &Fixture::value_at, &vllm::KVCache::store_value, &vllm::KVCache::read_value);
                }
        }
        for (int b = 0; b < num_blocks; ++b) table.push_back((b * 7) % num_blocks);  // scattered blocks
        for (int t = 0; t < n_tokens; ++t) positions.push_back(first_pos + t);
    }

    PagedAttention args(float* out) const {
        PagedAttention a;
        a.q = q.data();
        a.out = out;
        a.positions = positions.data();
        a.k_cache = cache ? cache->layer_keys(0) : keys.data();
        a.v_cache = cache ? cache->layer_values(0) : values.data();
        a.kv_dtype = dtype;
        a.block_size = block_size;
        a.n_heads = n_heads;
        a.n_kv_heads = n_kv_heads;
        a.head_dim = head_dim;
        a.scale = 1.0f / std::sqrt(float(head_dim));
        a.window = window;
        a.softcap = softcap;
        a.sinks = sinks.empty() ? nullptr : sinks.data();
        return a;
    }

    // Bytes of one cache side as the kernel reads it.
    size_t cache_bytes() const {
        return size_t(num_blocks) * vllm::KVCache::layer_block_bytes(n_kv_heads, head_dim, block_size, dtype);
    }

    // The layouts of kv_cache.h: K slot-minor, V a row per (head, slot).
    float& key_at(int block, int slot, int kv_head, int d) {
        return keys[((size_t(block) * n_kv_heads + kv_head) * head_dim + d) * block_size + slot];
    }
    float& value_at(int block, int slot, int kv_head, int d) {
        return values[((size_t(block) * n_kv_heads + kv_head) * block_size + slot) * head_dim + d];
    }
    float key(int pos, int kv_head, int d) const {
        return const_cast<Fixture*>(this)->key_at(table[pos / block_size], pos % block_size, kv_head, d);
    }
    float value(int pos, int kv_head, int d) const {
        return const_cast<Fixture*>(this)->value_at(table[pos / block_size], pos % block_size, kv_head, d);
    }

    // Softmax attention in double, straight from the definition: keys
    // [first, pos] (first = pos - window + 1 with a window), scores
    // soft-capped when asked, the head's sink (if any) in the denominator.
    std::vector<float> reference() const {
        std::vector<float> out(q.size());
        const int group = n_heads / n_kv_heads;
        for (size_t t = 0; t < positions.size(); ++t)
            for (int h = 0; h < n_heads; ++h) {
                const float* qv = &q[(t * n_heads + h) * head_dim];
                const int first = window > 0 ? std::max(0, positions[t] - window + 1) : 0;
                std::vector<double> w(positions[t] + 1 - first);
                double max_w = -1e300, total = 0;
                for (int j = first; j <= positions[t]; ++j) {
                    double s = 0;
                    for (int d = 0; d < head_dim; ++d) s += double(qv[d]) * key(j, h / group, d);
                    s /= std::sqrt(double(head_dim));
                    if (softcap > 0) s = softcap * std::tanh(s / softcap);
                    w[j - first] = s;
                    max_w = std::max(max_w, s);
                }
                for (double& x : w) total += (x = std::exp(x - max_w));
                if (!sinks.empty()) total += std::exp(double(sinks[h]) - max_w);
                for (int d = 0; d < head_dim; ++d) {
                    double acc = 0;
                    for (int j = first; j <= positions[t]; ++j) acc += w[j - first] * value(j, h / group, d);
                    out[(t * n_heads + h) * head_dim + d] = float(acc / total);
                }
            }
        return out;
    }
};

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

AttentionTile whole(const Fixture& f, int n_tokens, int kv_head) {
    AttentionTile tile;
    tile.block_table = f.table.data();
    tile.t_begin = 0;
    tile.t_end = n_tokens;
    tile.kv_head = kv_head;
    return tile;
}

// Sinks around the scores' own size (one large enough to take most of the
// weight), one per query head.
std::vector<float> some_sinks(int n_heads) {
    std::vector<float> sinks(n_heads);
    for (int h = 0; h < n_heads; ++h) sinks[h] = float(h % 4) - 1.0f + (h == 2 ? 4.0f : 0.0f);
    return sinks;
}

void test_against_reference(int n_tokens, int first_pos, int block_size = 16, KvDtype dtype = KvDtype::F32,
                            int window = 0, float softcap = 0.0f, bool sinks = false) {
    Fixture f(n_tokens, first_pos, block_size, dtype);
    f.window = window;
    f.softcap = softcap;
    if (sinks) f.sinks = some_sinks(f.n_heads);
    std::vector<float> out(f.q.size());
    PagedAttention a = f.args(out.data());
    for (int h = 0; h < f.n_kv_heads; ++h) attention_tile(a, whole(f, n_tokens, h));
    check(max_diff(out, f.reference()) < 1e-4, "tile equals the float definition", max_diff(out, f.reference()));
}

// Other GQA groups: the queries of one position are summed three at a time
// (a group of 4: three and one; of 2; MHA: one), and head dimensions that
// are not a whole number of value passes (16, 48).
void test_group_shapes(KvDtype dtype) {
    const int shapes[][3] = {{8, 2, 48}, {4, 2, 16}, {2, 2, 64}};  // n_heads, n_kv_heads, head_dim
    for (const auto& shape : shapes)
        for (const int n_tokens : {1, 5}) {
            Fixture f(n_tokens, 90, 16, dtype, shape[0], shape[1], shape[2]);
            std::vector<float> out(f.q.size());
            PagedAttention a = f.args(out.data());
            for (int h = 0; h < f.n_kv_heads; ++h) attention_tile(a, whole(f, n_tokens, h));
            check(max_diff(out, f.reference()) < 1e-4, "other GQA groups equal the float definition",
                  max_diff(out, f.reference()));
        }
}

// Runs `tile` over keys [0, span) as runs of `per_split` keys (a multiple
// of 16), each into its own partial, and merges them (as
// paged_attention (model/blocks/) splits long contexts).
void split_and_merge(const PagedAttention& a, const AttentionTile& tile, int per_split, int span) {
    const int n = (span + per_split - 1) / per_split;
    std::vector<std::vector<float>> parts(n, std::vector<float>(attention_partial_floats(a, tile)));
    std::vector<const float*> pointers;
    for (int k = 0; k < n; ++k) {
        AttentionTile part = tile;
        part.key_begin = k * per_split;
        part.key_end = std::min(span, (k + 1) * per_split);
        part.partial = parts[k].data();
        attention_tile(a, part);
        pointers.push_back(parts[k].data());
    }
    merge_attention_partials(a, tile, pointers.data(), n);
}

void test_split_merge(int n_tokens, int first_pos, int n_splits, KvDtype dtype = KvDtype::F32, int window = 0,
                      bool sinks = false) {
    Fixture f(n_tokens, first_pos, 16, dtype);
    f.window = window;
    if (sinks) f.sinks = some_sinks(f.n_heads);
    std::vector<float> full(f.q.size()), merged(f.q.size());
    PagedAttention a = f.args(full.data());
    PagedAttention b = f.args(merged.data());
    const int span = first_pos + n_tokens;
    const int per_split = (span + n_splits * 16 - 1) / (n_splits * 16) * 16;
    for (int h = 0; h < f.n_kv_heads; ++h) {
        const AttentionTile tile = whole(f, n_tokens, h);
        attention_tile(a, tile);
        split_and_merge(b, tile, per_split, span);
    }
    check(max_diff(full, merged) < 1e-5, "split-key partials merge to the whole tile", max_diff(full, merged));
}

// A copy of `bytes` bytes preceded by an unreadable guard region: a read
// through a kNullBlock (-1) table entry lands in it and faults.
class GuardedCopy {
public:
    GuardedCopy(const void* data, size_t bytes) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        guard_ = (kGuardBytes + page - 1) / page * page;
        size_ = guard_ + (bytes + page - 1) / page * page;
        base_ = static_cast<char*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        mprotect(base_, guard_, PROT_NONE);
        std::memcpy(base_ + guard_, data, bytes);
    }
    ~GuardedCopy() { munmap(base_, size_); }
    GuardedCopy(const GuardedCopy&) = delete;
    GuardedCopy& operator=(const GuardedCopy&) = delete;
    const void* data() const { return base_ + guard_; }

private:
    // Block -1 starts at most one block (block_size x 3 heads x 64 dims x 4
    // bytes: 24 KiB for blocks of 32) before the cache.
    static constexpr size_t kGuardBytes = 64 << 10;
    char* base_;
    size_t guard_, size_;
};

// A sliding window over a table whose blocks wholly before the earliest
// query's window are freed (kNullBlock, as a sliding KV cache group leaves
// them): the kernel loads none of them (a load would fault in the guard)
// and the result is the definition's.
void test_window_skips_freed_blocks(int n_tokens, int first_pos, int block_size, KvDtype dtype, int window) {
    Fixture f(n_tokens, first_pos, block_size, dtype);
    f.window = window;
    std::vector<float> out(f.q.size());
    PagedAttention a = f.args(out.data());
    GuardedCopy keys(a.k_cache, f.cache_bytes()), values(a.v_cache, f.cache_bytes());
    a.k_cache = keys.data();
    a.v_cache = values.data();
    std::vector<int32_t> freed = f.table;
    const int first_visible = std::max(0, first_pos - window + 1);
    for (int b = 0; b < first_visible / block_size; ++b) freed[b] = -1;
    for (int h = 0; h < f.n_kv_heads; ++h) {
        AttentionTile tile = whole(f, n_tokens, h);
        tile.block_table = freed.data();
        attention_tile(a, tile);
    }
    const double diff = max_diff(out, f.reference());
    check(diff < 1e-4, ("window over freed blocks of " + std::to_string(block_size) + " equals the definition").c_str(),
          diff);
}

// Layers of different KV shapes in one cache (kv_layer_shape.h): a layer
// with K and V, one with K only (a latent), one with nothing, one of other
// head sizes, across two groups. Every layer's every block is written with
// its own values and all read back as stored (no layer or block overlaps
// another), a layer's block bytes are its own shape's, and the cache's and
// each group's bytes are the sum of their layers'.
void test_layer_shapes(KvDtype dtype) {
    using vllm::KvLayerShape;
    const int block_size = 4;
    const std::vector<KvLayerShape> shapes = {{2, 8, 8}, {1, 12, 0}, {0, 0, 0}, {4, 16, 16}, {1, 6, 10}};
    const std::vector<vllm::KVCacheGroupSpec> groups = vllm::group_layers_by_window({0, 0, 0, 16, 16});
    const std::vector<int> group_blocks = {3, 2};
    vllm::KVCache cache(groups, group_blocks, shapes, block_size, dtype);
    const std::string name = std::string(" (dtype ") + std::to_string(int(dtype)) + ")";
    size_t total = 0, group_total[2] = {0, 0};
    for (size_t l = 0; l < shapes.size(); ++l) {
        const size_t k = block_size * shapes[l].key_token_bytes(dtype), v = block_size * shapes[l].value_token_bytes(dtype);
        vllm_test::check(cache.key_block_bytes(int(l)) == k && cache.value_block_bytes(int(l)) == v,
                         "layer " + std::to_string(l) + "'s block bytes are its shape's" + name);
        const int g = cache.group_of(int(l));
        total += group_blocks[g] * (k + v);
        group_total[g] += group_blocks[g] * (k + v);
    }
    vllm_test::check(cache.total_bytes() == total && cache.group_bytes(0) == group_total[0] &&
                         cache.group_bytes(1) == group_total[1],
                     "the cache's and the groups' bytes are their layers' sums" + name);
    // A value exactly representable in every dtype's rounding: small
    // integers over 64 (int8 rows get max 127 * scale of a power of two).
    auto value = [](size_t l, int block, int slot, int side, size_t i) {
        return float(int((l * 131 + block * 31 + slot * 7 + side * 3 + i) % 127) - 63) / 64.0f;
    };
    auto fill = [&](size_t l, int block, int slot, int side, int n) {
        std::vector<float> row(n);
        for (int i = 0; i < n; ++i) row[i] = value(l, block, slot, side, i);
        return row;
    };
    for (size_t l = 0; l < shapes.size(); ++l)
        for (int b = 0; b < group_blocks[cache.group_of(int(l))]; ++b)
            for (int slot = 0; slot < block_size; ++slot) {
                if (shapes[l].k_head_dim > 0)
                    cache.store_key(int(l), b, slot,
                                    fill(l, b, slot, 0, shapes[l].n_kv_heads * shapes[l].k_head_dim).data());
                if (shapes[l].v_head_dim > 0)
                    cache.store_value(int(l), b, slot,
                                      fill(l, b, slot, 1, shapes[l].n_kv_heads * shapes[l].v_head_dim).data());
            }
    double worst = 0.0;
    for (size_t l = 0; l < shapes.size(); ++l)
        for (int b = 0; b < group_blocks[cache.group_of(int(l))]; ++b)
            for (int slot = 0; slot < block_size; ++slot)
                for (int side = 0; side < 2; ++side) {
                    const int dim = side == 0 ? shapes[l].k_head_dim : shapes[l].v_head_dim;
                    const int n = shapes[l].n_kv_heads * dim;
                    if (n == 0) continue;
                    std::vector<float> got(n), want = fill(l, b, slot, side, n);
                    if (side == 0) cache.read_key(int(l), b, slot, got.data());
                    else cache.read_value(int(l), b, slot, got.data());
                    for (int i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
                }
    // int8 rounds each row to 1/127 of its largest magnitude (< 1).
    check(worst <= (dtype == KvDtype::I8 ? 1.0 / 127 : 0.0), ("every layer's blocks read back as stored" + name).c_str(),
          worst);
}

// The int8 cache's rows (dtype/kv_dtype.h): each value read back within
// half its row's scale (plus the half-rounded scale's share at the row's
// largest value), rows of zeros and of tiny values exact or within their
// bound, the largest magnitude stored as +-127; f16 and f32 caches read
// back the half-rounded or exact values.
void test_int8_rows() {
    const int n_kv_heads = 3, head_dim = 64, block_size = 16, n = n_kv_heads * head_dim;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    double worst = 0;
    int bad = 0, misaligned = 0;
    for (const KvDtype dtype : {KvDtype::F32, KvDtype::F16, KvDtype::I8}) {
        vllm::KVCache cache({{0, {0}}}, {4}, n_kv_heads, head_dim, block_size, dtype);
        for (const void* side : {cache.layer_keys(0), cache.layer_values(0)})
            misaligned += reinterpret_cast<uintptr_t>(side) % 64 != 0;
        for (int trial = 0; trial < 64; ++trial) {
            std::vector<float> x(n), k(n), v(n);
            const float magnitude = trial % 4 == 0 ? 1e-6f : trial % 4 == 1 ? 300.0f : 1.0f;
            for (float& e : x) e = normal(rng) * magnitude;
            if (trial == 5) std::fill(x.begin(), x.begin() + head_dim, 0.0f);  // a row of zeros
            const int block = trial % 4, slot = trial % block_size;
            cache.store_key(0, block, slot, x.data());
            cache.store_value(0, block, slot, x.data());
            cache.read_key(0, block, slot, k.data());
            cache.read_value(0, block, slot, v.data());
            for (int h = 0; h < n_kv_heads; ++h) {
                float amax = 0;
                for (int d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(x[h * head_dim + d]));
                for (int d = 0; d < head_dim; ++d) {
                    const int i = h * head_dim + d;
                    bad += k[i] != v[i];
                    if (dtype == KvDtype::F32) bad += k[i] != x[i];
                    if (dtype == KvDtype::F16) bad += k[i] != vllm::half_to_float(vllm::float_to_half(x[i]));
                    if (dtype != KvDtype::I8) continue;
                    // The scale is amax / 127 rounded to half (relative error 2^-11, or absolute 2^-25 below
                    // half's normal range); the largest values round against it to +-127 at worst.
                    const double bound = amax / 127.0 / 2 + amax * 1.0 / 1024 + std::ldexp(127.0, -25);
                    worst = std::max(worst, std::fabs(k[i] - x[i]) / (bound + 1e-30));
                    if (amax == 0) bad += k[i] != 0;
                }
            }
        }
    }
    check(misaligned == 0, "each side of the cache starts on a cache line", misaligned);
    check(bad == 0, "f32/f16 rows read back exactly, K and V alike", bad);
    check(worst <= 1.0, "int8 rows read back within half a step of their scale", worst);
}

// The cache's half conversions: every finite half survives a round trip;
// values between two neighbours round to the nearer, ties to the even one;
// past the largest half is infinity.
void test_half_conversion() {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00u; ++h) {
        const float f = vllm::half_to_float(uint16_t(h));
        const float g = h + 1 < 0x7c00u ? vllm::half_to_float(uint16_t(h + 1)) : 65536.0f;
        const float mid = (f + g) / 2;  // exact in float
        const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
        for (const float sign : {1.0f, -1.0f}) {
            const uint16_t s = sign < 0 ? 0x8000 : 0;
            bad += vllm::float_to_half(sign * f) != (h | s);
            bad += vllm::float_to_half(sign * mid) != (even | s);
            bad += vllm::float_to_half(sign * std::nextafter(mid, 0.0f)) != (h | s);
            bad += vllm::float_to_half(sign * std::nextafter(mid, INFINITY)) != ((h + 1) | s);
        }
    }
    bad += vllm::float_to_half(1e6f) != 0x7c00 || vllm::float_to_half(-INFINITY) != 0xfc00;
    bad += !std::isnan(vllm::half_to_float(vllm::float_to_half(NAN)));
    bad += vllm::half_to_float(0x3c00) != 1.0f || vllm::half_to_float(0x0001) != std::ldexp(1.0f, -24);
    check(bad == 0, "half conversions round to nearest even and back exactly", bad);
}

// An element-wise op `op(x, up, n)` against double math `want(x, up)`:
// |got - want| / (|want| + floor) < 1e-5 (fast_exp rounds x log2(e) to
// float, so its error grows with |x|, 4.7e-6 at |x| <= 30; past x = -87,
// where fast_exp clamps, results under 1e-35 are compared with `floor`
// 1e-24; soft_cap's tanh is 2 sigmoid(2x) - 1, whose error is absolute, a
// float ulp of 1, so it is measured against the cap); and split at any
// element into calls whose tails fall elsewhere: bit for bit the same, as
// the model's threads split the rows anywhere.
template <typename Op, typename Want>
void test_elementwise(const char* name, Op op, Want want, double floor = 1e-24) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> wide(-30.0f, 30.0f), narrow(-4.0f, 4.0f);
    const int n = 1003;  // 62 vectors and a tail of 11
    std::vector<float> x(n), up(n);
    for (int i = 0; i < n; ++i) x[i] = i % 2 ? wide(rng) : narrow(rng), up[i] = narrow(rng);
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 86.0f, -86.0f, 88.0f, -88.0f, 100.0f, -100.0f};
    for (size_t i = 0; i < sizeof special / sizeof *special; ++i) x[i * 97] = special[i];
    std::vector<float> whole_call = x;
    op(whole_call.data(), up.data(), n);
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        const double w = want(double(x[i]), double(up[i]));
        worst = std::max(worst, std::fabs(whole_call[i] - w) / (std::fabs(w) + floor));
    }
    check(worst < 1e-5, name, worst);
    for (const int cut : {1, 5, 16, 23, 500}) {
        std::vector<float> pieces = x;
        for (int begin = 0; begin < n; begin += cut) op(&pieces[begin], &up[begin], std::min(cut, n - begin));
        check(std::memcmp(pieces.data(), whole_call.data(), sizeof(float) * n) == 0,
              "the same bits in a tail as in a vector", cut);
    }
}

// sum_exp against double math over logits-like rows (a tail of 11 past 62
// vectors; terms under fast_exp's clamp at -87 count as about 1.6e-38).
void test_sum_exp() {
    std::mt19937 rng(5);
    std::normal_distribution<float> logit(0.0f, 4.0f);
    const int n = 1003;
    std::vector<float> x(n);
    for (float& v : x) v = logit(rng);
    x[500] = -200.0f;
    const float shift = *std::max_element(x.begin(), x.end());
    double want = 0;
    for (const float v : x) want += std::exp(double(v) - shift);
    const double error = std::fabs(sum_exp(x.data(), n, shift) - want) / want;
    check(error < 1e-5, "sum_exp equals the sum of exp(x - shift)", error);
    check(sum_exp(x.data(), 0, shift) == 0.0f, "sum_exp of nothing is 0", 0);
    check(sum_exp(&shift, 1, shift) == 1.0f, "sum_exp of the shift itself is 1", 0);
}

void test_activations() {
    test_elementwise("silu_mul equals g * sigmoid(g) * up", silu_mul,
                     [](double g, double up) { return g / (1.0 + std::exp(-g)) * up; });
    // 0.5 g (1 + tanh(u)) as g / (1 + e^-2u): the same value, without the
    // cancellation that makes it 0 in double for g below about -9.
    test_elementwise("gelu_tanh_mul equals 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * up", gelu_tanh_mul,
                     [](double g, double up) {
                         const double u = std::sqrt(2.0 / std::acos(-1.0)) * (g + 0.044715 * g * g * g);
                         return g / (1.0 + std::exp(-2.0 * u)) * up;
                     });
    for (const float cap : {5.0f, 30.0f})
        test_elementwise(
            "soft_cap equals cap * tanh(x / cap)", [cap](float* x, const float*, int64_t n) { soft_cap(x, n, cap); },
            [cap](double x, double) { return cap * std::tanh(x / cap); }, cap);
    test_sum_exp();
}

double thread_cpu_us() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Times attention as a SmolLM2-135M forward pass runs it (30 layers, 9
// query heads over 3 KV heads of 64 dims): the last `n_tokens` positions of
// a `context`-key sequence (1: a decode step; 9: verifying 8 drafted
// tokens; hundreds: a prefill chunk), tiled and split into runs of 512 keys
// with partials merged, as paged_attention (model/blocks/) does, on one thread, for
// each KV cache type. The caches of all layers (94 MB in f16 at 4,096 keys)
// exceed the CPU's caches, as the engine's do, so this is the memory
// traffic a step pays. Types alternate over rounds; the best round counts.
// Timed in the thread's CPU time (memory stalls included), so a loaded
// machine's waits for a core do not count.
void bench_attention(int context, int n_tokens) {
    const int layers = 30, n_heads = 9, n_kv_heads = 3, head_dim = 64, block_size = 16, split = 512;
    const int group = n_heads / n_kv_heads, tokens_per_tile = kAttentionMaxQueries / group;
    const int blocks = (context + block_size - 1) / block_size;
    std::vector<int> all_layers(layers);
    for (int l = 0; l < layers; ++l) all_layers[l] = l;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> row(size_t(n_kv_heads) * head_dim), q(size_t(n_tokens) * n_heads * head_dim), out(q.size());
    for (float& x : q) x = normal(rng);
    const KvDtype types[] = {KvDtype::F32, KvDtype::F16, KvDtype::I8};
    const char* names[] = {"f32", "f16", "int8"};
    std::vector<std::unique_ptr<vllm::KVCache>> caches;
    for (const KvDtype dtype : types) {
        caches.push_back(std::make_unique<vllm::KVCache>(std::vector<vllm::KVCacheGroupSpec>{{0, all_layers}},
                                                         std::vector<int>{blocks}, n_kv_heads, head_dim, block_size,
                                                         dtype));
        for (int l = 0; l < layers; ++l)
            for (int p = 0; p < context; ++p) {
                for (float& x : row) x = normal(rng);
                caches.back()->store_key(l, p / block_size, p % block_size, row.data());
                caches.back()->store_value(l, p / block_size, p % block_size, row.data());
            }
    }
    std::vector<int32_t> table(blocks), positions(n_tokens);
    for (int b = 0; b < blocks; ++b) table[b] = b;
    for (int t = 0; t < n_tokens; ++t) positions[t] = context - n_tokens + t;
    double best[3] = {1e30, 1e30, 1e30};
    for (int round = 0; round < 5; ++round)
        for (int t = 0; t < 3; ++t) {
            const double start = thread_cpu_us();
            for (int l = 0; l < layers; ++l) {
                PagedAttention a;
                a.q = q.data();
                a.out = out.data();
                a.positions = positions.data();
                a.k_cache = caches[t]->layer_keys(l);
                a.v_cache = caches[t]->layer_values(l);
                a.kv_dtype = types[t];
                a.block_size = block_size;
                a.n_heads = n_heads;
                a.n_kv_heads = n_kv_heads;
                a.head_dim = head_dim;
                a.scale = 0.125f;
                for (int t0 = 0; t0 < n_tokens; t0 += tokens_per_tile)
                    for (int h = 0; h < n_kv_heads; ++h) {
                        AttentionTile tile;
                        tile.block_table = table.data();
                        tile.t_begin = t0;
                        tile.t_end = std::min(n_tokens, t0 + tokens_per_tile);
                        tile.kv_head = h;
                        const int span = positions[tile.t_end - 1] + 1;
                        if (span <= split) attention_tile(a, tile);
                        else split_and_merge(a, tile, split, span);
                    }
            }
            best[t] = std::min(best[t], thread_cpu_us() - start);
        }
    double pairs = 0;  // query-key pairs a step scores
    for (int t = 0; t < n_tokens; ++t) pairs += double(positions[t] + 1) * n_heads * layers;
    std::printf("attention of %d tokens at %d keys, 30 layers, one thread, CPU time (best of 5):", n_tokens, context);
    for (int t = 0; t < 3; ++t) std::printf(" %s %.0f us (%.2f ns/query-key)", names[t], best[t], best[t] * 1e3 / pairs);
    std::printf("; int8 / f16 time %.2f\n", best[2] / best[1]);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--bench") {
        bench_attention(argc > 2 ? std::atoi(argv[2]) : 4096, argc > 3 ? std::atoi(argv[3]) : 1);
        return 0;
    }
    test_half_conversion();
    test_activations();
    test_int8_rows();
    for (const KvDtype dtype : {KvDtype::F32, KvDtype::F16, KvDtype::I8}) {
        test_against_reference(1, 0, 16, dtype);     // first token: attends to itself only
        test_against_reference(1, 300, 16, dtype);   // decode with a long context
        test_against_reference(5, 17, 16, dtype);    // a prefill chunk across a block boundary
        test_against_reference(21, 100, 16, dtype);  // a full tile of queries
        test_against_reference(3, 150, 8, dtype);    // small blocks: keys gathered
        test_against_reference(3, 150, 32, dtype);   // larger blocks: two chunks a block
        test_group_shapes(dtype);
        test_layer_shapes(dtype);
        test_split_merge(1, 300, 2, dtype);
        test_split_merge(1, 500, 4, dtype);
        test_split_merge(3, 200, 3, dtype);  // queries whose causal limits differ; a split can hold no key for some
        test_against_reference(21, 100, 16, dtype, 7);        // window shorter than the tile: every query's own start
        test_against_reference(1, 300, 16, dtype, 40);        // decode: a window starting inside a chunk
        test_against_reference(3, 150, 8, dtype, 33);         // gathered keys with a window
        test_against_reference(5, 17, 16, dtype, 0, 2.0f);    // soft-capped scores
        test_against_reference(5, 70, 16, dtype, 30, 2.0f);   // both
        test_split_merge(3, 500, 4, dtype, 100);  // splits wholly before the window merge as no-ops
        test_against_reference(5, 17, 16, dtype, 0, 0.0f, true);   // attention sinks (gpt-oss)
        test_against_reference(21, 100, 16, dtype, 7, 0.0f, true);  // sinks on a sliding layer
        test_split_merge(3, 500, 4, dtype, 0, true);                // sinks through the split-key merge
        test_split_merge(3, 500, 4, dtype, 100, true);
        for (const int block_size : {2, 4, 8, 16, 32}) {
            test_window_skips_freed_blocks(1, 301, block_size, dtype, 8);    // decode
            test_window_skips_freed_blocks(5, 101, block_size, dtype, 8);    // a prefill chunk
            test_window_skips_freed_blocks(21, 203, block_size, dtype, 33);  // a full tile, a wider window
        }
    }
    return report();
}
