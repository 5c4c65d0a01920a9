// The body of ops.h's kernels. The attention core and silu_mul are written
// with GCC/Clang vector extensions (VLLM_OPS_LANES floats: one AVX-512 or
// AVX2 register, four SSE/NEON ones, which each target lowers to its own
// registers), so the same source gives dependable SIMD code on each ISA;
// rms_norm is a plain loop the compiler vectorizes. Included by one .cpp per
// instruction set inside a distinct namespace, so each copy is compiled
// with that ISA's flags.
// Expects VLLM_OPS_NAMESPACE, VLLM_OPS_LANES (the vector width in floats)
// and VLLM_OPS_VECTOR_REGISTERS (how many such vectors the ISA's registers
// hold) to be defined by the including file, and in that namespace
// `widen_halves(const uint16_t* p)`: VLLM_OPS_LANES IEEE halves at p (no
// alignment) as floats, one float vector (the type of Vec below),
// with that ISA's conversion instructions (GCC's generic conversion of half
// vectors goes one element at a time), for half KV caches. Half to float is
// exact, so every build gets the same floats from the cache.
// Likewise `widen_int8(const int8_t* p)`: VLLM_OPS_LANES int8 as floats (exact), for
// int8 KV caches (GCC's generic conversion of a byte vector goes one
// element at a time here too).
// No standard containers or other out-of-line templates here: the linker
// keeps one copy of each template instantiation, and an AVX-512 copy could
// end up serving the scalar path on a CPU without AVX-512. (Templates in the
// unnamed namespace below are local to each file, so they are safe.)
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "dtype/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/prefetch.h"

// The vector helpers below are internal (inlined, file-local), so GCC's note
// that passing 64-byte vectors by value differs between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::VLLM_OPS_NAMESPACE {

namespace {

// The vector width: the including file's VLLM_OPS_LANES, its registers'
// width in floats (AVX2: 8; GCC splits wider generic vectors on AVX2
// through the stack, which made attention several times slower), or 16.
constexpr int kLanes = VLLM_OPS_LANES;
static_assert(kAttentionHeadDimMultiple % kLanes == 0, "head_dim is a whole number of vectors");
// dot()'s partial sums, a fixed count so that rms_norm gives the same
// bits on every build whatever its vector width.
constexpr int kDotLanes = 16;

inline float max_of(float a, float b) { return a > b ? a : b; }
inline int min_of(int a, int b) { return a < b ? a : b; }
inline int max_of(int a, int b) { return a > b ? a : b; }

inline float dot(const float* a, const float* b, int n) {
    float acc[kDotLanes] = {};
    int i = 0;
    for (; i + kDotLanes <= n; i += kDotLanes)
        for (int l = 0; l < kDotLanes; ++l) acc[l] += a[i + l] * b[i + l];
    float sum = 0.0f;
    for (int l = 0; l < kDotLanes; ++l) sum += acc[l];
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

// exp(x) for x <= 0 via 2^(x log2 e): integer part into the exponent bits,
// fraction by a degree-6 polynomial (relative error ~1e-7). Branch-free so
// loops over it vectorize.
inline float fast_exp(float x) {
    x = max_of(x, -87.0f);
    const float t = x * 1.44269504088896341f;
    const float fi = std::floor(t);
    const float f = t - fi;
    float p = 1.53533005e-4f;
    p = p * f + 1.33988122e-3f;
    p = p * f + 9.61835026e-3f;
    p = p * f + 5.55041086e-2f;
    p = p * f + 2.40226507e-1f;
    p = p * f + 6.93147182e-1f;
    p = p * f + 1.0f;
    const int32_t bits = (static_cast<int32_t>(fi) + 127) << 23;
    float scale2;
    std::memcpy(&scale2, &bits, sizeof scale2);
    return p * scale2;
}

// kLanes floats as one value. `VecU` is the same with 4-byte alignment, for
// loads from cache rows that are not 64-byte aligned.
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
typedef float VecU __attribute__((vector_size(kLanes * sizeof(float)), aligned(4)));
typedef int32_t IVec __attribute__((vector_size(kLanes * sizeof(int32_t))));

inline Vec load(const float* p) { return *reinterpret_cast<const VecU*>(p); }
inline void store(float* p, Vec v) { *reinterpret_cast<VecU*>(p) = v; }
inline Vec splat(float x) { return Vec{} + x; }
// 0, 1, ..., kLanes - 1.
inline IVec lane_index() {
    IVec v;
    for (int j = 0; j < kLanes; ++j) v[j] = j;
    return v;
}
// The lanes' sum, in a fixed order (pairwise halves).
inline float sum_lanes(Vec v) {
    float s[kLanes];
    std::memcpy(s, &v, sizeof s);
    for (int width = kLanes / 2; width > 0; width /= 2)
        for (int j = 0; j < width; ++j) s[j] += s[j + width];
    return s[0];
}

inline float max_lane(Vec v) {
    float m = v[0];
    for (int j = 1; j < kLanes; ++j) m = max_of(m, v[j]);
    return m;
}

// fast_exp on kLanes lanes at once (same polynomial).
inline Vec fast_exp(Vec x) {
    x = x < -87.0f ? splat(-87.0f) : x;
    const Vec t = x * 1.44269504088896341f;
    IVec ti = __builtin_convertvector(t, IVec);  // truncates toward zero
    Vec fi = __builtin_convertvector(ti, Vec);
    const IVec above = fi > t;                   // -1 where truncation rounded up
    ti += above;
    fi = __builtin_convertvector(ti, Vec);
    const Vec f = t - fi;
    Vec p = splat(1.53533005e-4f);
    p = p * f + 1.33988122e-3f;
    p = p * f + 9.61835026e-3f;
    p = p * f + 5.55041086e-2f;
    p = p * f + 2.40226507e-1f;
    p = p * f + 6.93147182e-1f;
    p = p * f + 1.0f;
    const IVec bits = (ti + 127) << 23;
    Vec scale2;
    std::memcpy(&scale2, &bits, sizeof scale2);
    return p * scale2;
}

// sigmoid(x) = 1 / (1 + e^-x) on kLanes lanes, branch-free, computed from
// e = e^-|x| (fast_exp's argument stays <= 0, no overflow) as
// (x >= 0 ? 1 : e) / (1 + e).
inline Vec sigmoid_lanes(Vec x) {
    const Vec e = fast_exp(x < 0.0f ? x : -x);
    const Vec one = splat(1.0f);
    return (x >= 0.0f ? one : e) / (one + e);
}

// tanh(x) = 2 sigmoid(2x) - 1.
inline Vec tanh_lanes(Vec x) { return 2.0f * sigmoid_lanes(2.0f * x) - 1.0f; }

inline Vec silu_mul_lanes(Vec g, Vec up) { return g * sigmoid_lanes(g) * up; }

// GELU's tanh form 0.5 g (1 + tanh(u)), u = sqrt(2/pi) (g + 0.044715 g^3),
// written as g sigmoid(2u): the same value without 1 + tanh's cancellation
// for negative g.
inline Vec gelu_tanh_mul_lanes(Vec g, Vec up) {
    const Vec u = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    return g * sigmoid_lanes(2.0f * u) * up;
}

// Applies `lanes` (Vec -> Vec) to x[0, n) in place, kLanes at a time. The last
// n % kLanes elements go through the same vector code, zero padded: the
// model splits rows across threads at any element, so an element must get
// the same bits in a tail as in a whole vector.
template <typename Lanes>
void map_lanes(float* x, const float* y, int64_t n, Lanes lanes) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) store(x + i, lanes(load(x + i), y ? load(y + i) : Vec{}));
    if (i == n) return;
    const size_t rest = size_t(n - i);
    float a[kLanes] = {}, b[kLanes] = {};
    std::memcpy(a, x + i, rest * sizeof(float));
    if (y) std::memcpy(b, y + i, rest * sizeof(float));
    store(a, lanes(load(a), load(b)));
    std::memcpy(x + i, a, rest * sizeof(float));
}

// A cache element (float, half or int8) as a float, and kLanes consecutive ones.
inline float to_float(float x) { return x; }
inline float to_float(uint16_t h) { return half_to_float(h); }
inline float to_float(int8_t q) { return q; }
inline Vec load_lanes(const float* p) { return load(p); }
inline Vec load_lanes(const uint16_t* p) { return widen_halves(p); }
inline Vec load_lanes(const int8_t* p) { return widen_int8(p); }

// Keys per softmax block: the scores of a block are computed first, then
// one running-maximum update per query and block, then the weighted values
// (a per-chunk online softmax spent most of decode attention on its serial
// max/exp/sum chain). Blocks start at absolute multiples of this, which
// divides the model's split of long key ranges, so a query's blocks (and
// its bits) do not depend on the tile it is in.
constexpr int kSoftmaxKeys = 128;
// A register tile of the scores pass: up to kScoreQueries queries times
// kScoreChunks chunks of kLanes keys, each key vector loaded once for all
// the tile's queries and each query's broadcast used for all its chunks.
// From the including file's VLLM_OPS_VECTOR_REGISTERS (registers of kLanes
// floats: AVX-512 32, AVX2 16, NEON's four-register vectors 8): Q x C
// accumulators, Q broadcasts and a key vector fit (the scalar build, 4,
// spills whatever the tile). A GQA group of 3 is one tile row (decode);
// prefill and verification stack several.
constexpr int kVectorRegisters = VLLM_OPS_VECTOR_REGISTERS;
constexpr int kScoreQueries = kVectorRegisters >= 32 ? 6 : kVectorRegisters >= 16 ? 3 : 2;
constexpr int kScoreChunks = kVectorRegisters >= 32 ? 4 : kVectorRegisters >= 16 ? 3 : kVectorRegisters >= 8 ? 2 : 1;

// The raw scores of Q queries (rows of q, hd apart) for C chunks of kLanes
// keys: dimension d of chunk c is the vector at k[c] + d * stride (the cache
// itself, or floats widened from it: widening is exact, so both give the
// same bits). Each score is one chain of multiply-adds over the dimensions
// in order, whatever Q and C are, so a query's bits do not depend on the
// tile it is in; Q x C chains in flight hide the multiply-add latency.
template <int Q, int C, typename S>
inline void chunk_scores(const S* const* k, size_t stride, const float* q, int hd, Vec (*out)[kScoreChunks]) {
    Vec acc[Q][C];
    for (int i = 0; i < Q; ++i)
        for (int c = 0; c < C; ++c) acc[i][c] = Vec{};
    for (int d = 0; d < hd; ++d) {
        Vec qv[Q];
        for (int i = 0; i < Q; ++i) qv[i] = splat(q[size_t(i) * hd + d]);
        for (int c = 0; c < C; ++c) {
            const Vec kv = load_lanes(k[c] + size_t(d) * stride);
            for (int i = 0; i < Q; ++i) acc[i][c] += qv[i] * kv;
        }
    }
    for (int i = 0; i < Q; ++i)
        for (int c = 0; c < C; ++c) out[i][c] = acc[i][c];
}

// chunk_scores for n <= kScoreQueries queries and either kScoreChunks
// chunks or one (the callers' only two cases).
template <int Q, typename S>
inline void chunk_scores_chunks(int n_chunks, const S* const* k, size_t stride, const float* q, int hd,
                                Vec (*out)[kScoreChunks]) {
    if (n_chunks == kScoreChunks) chunk_scores<Q, kScoreChunks>(k, stride, q, hd, out);
    else chunk_scores<Q, 1>(k, stride, q, hd, out);
}

template <typename S, int... Q>
inline void chunk_scores_of(int n, int n_chunks, const S* const* k, size_t stride, const float* q, int hd,
                            Vec (*out)[kScoreChunks], std::integer_sequence<int, Q...>) {
    ((n == Q + 1 ? chunk_scores_chunks<Q + 1>(n_chunks, k, stride, q, hd, out) : void()), ...);
}

// Queries a pass of add_values takes at once, each value vector loaded
// once for all of them: queries that weight the same keys of a chunk (a
// position's GQA group, and in prefill the positions the chunk lies wholly
// before). With kValueVecs per query, 12 AVX2 registers of accumulators
// and a weight broadcast per query; AVX-512's 32 registers take 6 queries.
constexpr int kValueQueries = kVectorRegisters >= 32 ? 6 : 3;

// Value vectors of the head dimension one pass of add_values keeps per
// query: 32 floats (4 AVX2 registers; other builds' 16-float vectors take
// two), which leaves room for the value vector and the broadcast weights.
constexpr int kValueVecs = 32 / kLanes;

// o[i] += sum_j w[i][j] * V_j for j in [j0, j1), Q queries (rows of o hd
// apart, their weights kSoftmaxKeys apart in w), over the V vectors of the
// head dimension from float c. V_j is value row j read from the cache
// (int8: times scales[j]), loaded and widened once for all Q queries. Each
// query's arithmetic (the order over j, one multiply-add per element and
// key) is the same whatever Q is, so its bits do not depend on its tile.
template <int Q, int V, typename T>
inline void add_values(const T* const* rows, const float* scales, int j0, int j1, const float* w, float* o, int hd,
                       int c) {
    Vec acc[Q][V];
    for (int i = 0; i < Q; ++i)
        for (int v = 0; v < V; ++v) acc[i][v] = load(o + size_t(i) * hd + c + v * kLanes);
    for (int j = j0; j < j1; ++j) {
        // One value vector live at a time: Q x V accumulators, Q weights
        // and it fill AVX2's 16 registers without a spill.
        float wj[Q];
        for (int i = 0; i < Q; ++i) wj[i] = w[size_t(i) * kSoftmaxKeys + j];
        for (int v = 0; v < V; ++v) {
            Vec val = load_lanes(rows[j] + c + v * kLanes);
            if constexpr (sizeof(T) == 1) val *= scales[j];
            for (int i = 0; i < Q; ++i) acc[i][v] += wj[i] * val;
        }
    }
    for (int i = 0; i < Q; ++i)
        for (int v = 0; v < V; ++v) store(o + size_t(i) * hd + c + v * kLanes, acc[i][v]);
}

template <int Q, typename T>
inline void add_values_all(const T* const* rows, const float* scales, int j0, int j1, const float* w, float* o,
                           int hd) {
    int c = 0;
    for (; c + kValueVecs * kLanes <= hd; c += kValueVecs * kLanes)
        add_values<Q, kValueVecs>(rows, scales, j0, j1, w, o, hd, c);
    for (; c < hd; c += kLanes) add_values<Q, 1>(rows, scales, j0, j1, w, o, hd, c);
}

template <typename T, int... Q>
inline void add_values_of(int n, const T* const* rows, const float* scales, int j0, int j1, const float* w, float* o,
                          int hd, std::integer_sequence<int, Q...>) {
    ((n == Q + 1 ? add_values_all<Q + 1>(rows, scales, j0, j1, w, o, hd) : void()), ...);
}

// The kernel for cache elements of type T (float, uint16_t halves, or
// int8_t with a half scale per token and KV head).
template <typename T>
void attention_tile_impl(const PagedAttention& a, const AttentionTile& tile) {
    constexpr bool quantized = sizeof(T) == 1;
    const T* const k_cache = static_cast<const T*>(a.k_cache);
    const T* const v_cache = static_cast<const T*>(a.v_cache);
    const int32_t* block_table = tile.block_table;
    const int64_t t_begin = tile.t_begin, t_end = tile.t_end;
    const int kv_head = tile.kv_head;
    const int hd = a.head_dim, group = a.n_heads / a.n_kv_heads, bs = a.block_size;
    // Elements from one block to the next (int8: the scales included), and
    // from a block's start to its scales.
    const size_t block_elems = size_t(bs) * kv_token_bytes(a.n_kv_heads, hd, a.kv_dtype) / sizeof(T);
    const size_t scales_at = size_t(bs) * a.n_kv_heads * hd;
    // Query vectors of this tile: (token, head-in-group), pre-scaled.
    const int nq = static_cast<int>(t_end - t_begin) * group;
    float q[kAttentionTileFloats];
    alignas(64) float o[kAttentionTileFloats];
    float m[kAttentionMaxQueries], l[kAttentionMaxQueries];
    int32_t pos[kAttentionMaxQueries];
    for (int qi = 0; qi < nq; ++qi) {
        m[qi] = -INFINITY;
        l[qi] = 0.0f;
    }
    for (int i = 0; i < nq * hd; ++i) o[i] = 0.0f;
    for (int64_t t = t_begin; t < t_end; ++t)
        for (int g = 0; g < group; ++g) {
            const int qi = static_cast<int>(t - t_begin) * group + g;
            const float* src = a.q + (t * a.n_heads + kv_head * group + g) * hd;
            for (int d = 0; d < hd; ++d) q[size_t(qi) * hd + d] = src[d] * a.scale;
            pos[qi] = a.positions[t];
        }
    // Keys are visited in chunks of kLanes slots as [dim][slot] vectors, so
    // each query's scores for the chunk are vector multiply-adds with no
    // horizontal sums. The K cache is slot-minor: with blocks of a multiple
    // of kLanes slots a chunk is one vector load (widened) per dimension,
    // read in place by every pass of queries (widening is part of the
    // load; a float copy of the chunk for several passes cost more in
    // stores and reloads: a verify of 9 tokens at 700 keys 7.0 ms with it,
    // 6.5 without); smaller blocks gather it into `kt`. Lanes past a
    // query's visible keys are masked below, and every lane's arithmetic
    // is its own, so results do not depend on them. Value rows are read in
    // place, each loaded (and widened) once for the queries that weight the
    // same keys (add_values).
    const int last = min_of(a.positions[t_end - 1], tile.key_end - 1);
    // With a sliding window, chunks before the earliest query's window hold
    // nothing the tile sees; start at the chunk (an absolute multiple of
    // kLanes) that holds its first visible key.
    // No key before `first_read` is loaded either (the lanes before it are
    // masked for every query, and are padded with a visible key): a sliding
    // window's blocks before it may already be freed (kNullBlock).
    int first_chunk = tile.key_begin, first_read = tile.key_begin;
    if (a.window > 0) {
        int lowest = pos[0];
        for (int qi = 1; qi < nq; ++qi) lowest = min_of(lowest, pos[qi]);
        const int first_key = lowest - a.window + 1;
        if (first_key > first_chunk) first_chunk = first_key / kLanes * kLanes, first_read = first_key;
    }
    // The keys query qi sees: [seen_from(qi), pos[qi]].
    auto seen_from = [&](int qi) { return a.window > 0 ? max_of(0, pos[qi] - a.window + 1) : 0; };
    const int hd_vecs = hd / kLanes;
    const bool whole_chunks = bs % kLanes == 0;
    // [chunk][dim][key of chunk], gathered from blocks of fewer than kLanes slots.
    alignas(64) float kt[kScoreChunks * kLanes * kAttentionMaxHeadDim];
    float* kt_chunk[kScoreChunks];  // chunk c's [dim][key] in kt
    for (int c = 0; c < kScoreChunks; ++c) kt_chunk[c] = &kt[size_t(c) * hd * kLanes];
    alignas(64) float s[kAttentionMaxQueries * kSoftmaxKeys];  // [query][key of block]: scores, then weights
    // Either side of a block is one run per KV head (kv_cache.h): this
    // head's run in the block that holds key p, and its int8 scales
    // (key p's; the next keys of its block follow).
    auto head_run = [&](const T* side, int p) {
        return side + size_t(block_table[p / bs]) * block_elems + size_t(kv_head) * hd * bs;
    };
    auto head_scales = [&](const T* side, int p) {
        return reinterpret_cast<const uint16_t*>(side + size_t(block_table[p / bs]) * block_elems + scales_at) +
               size_t(kv_head) * bs + p % bs;
    };
    auto key_rows = [&](int p) { return head_run(k_cache, p) + p % bs; };  // dimension d is d * bs further
    auto value_row = [&](int p) { return head_run(v_cache, p) + size_t(p % bs) * hd; };
    auto key_scales = [&](int p) { return head_scales(k_cache, p); };
    auto value_scale = [&](int p) { return head_scales(v_cache, p); };
    // The value rows of a chunk's keys [start + j0, start + n_keys), j0 the
    // first it may read, and (int8) their scales: with chunks inside one
    // block, one block-table lookup (a division) per chunk, not per key.
    auto chunk_values = [&](int start, int n_keys, const T** rows, const uint16_t** scales) {
        const int j0 = max_of(0, first_read - start);
        for (int j = j0; j < n_keys; ++j) {
            const bool next_row = whole_chunks && j > j0;
            rows[j] = next_row ? rows[j0] + size_t(j - j0) * hd : value_row(start + j);
            if (quantized) scales[j] = next_row ? scales[j0] + (j - j0) : value_scale(start + j);
        }
    };
    // Keys and values are requested ahead of use: cache blocks are
    // scattered over memory, where the hardware prefetchers lose the trail,
    // and decode attention otherwise waits on memory for most of its time.
    // The scores pass of each chunk requests the keys of the chunk
    // kSoftmaxKeys further on, and the values pass its values (the tile's
    // first block is requested at its start): about a microsecond ahead,
    // well past the memory's latency, and 32 KB (f16), within the L2 cache,
    // which is where they go: requests into L1 held its few miss buffers
    // for the whole trip from memory and stalled the loads behind them
    // (decode at 700 keys, f16, one thread: 2.1 ms into L1, 1.7 into L2;
    // AVX2 2.4 and 1.9; 9 tokens 7.5 and 7.1; a 512-token prefill alike).
    // Each pass spreading its own side's requests over its work, rather
    // than the scores pass requesting both, gave 7-10% less time over a
    // cold cache (test_attention --bench, 1,024 and 4,096 keys).
    constexpr int kLine = 64;
    const int row_bytes = hd * static_cast<int>(sizeof(T));
    auto prefetch_keys = [&](int start) {
        if (start > last) return;
        if (whole_chunks) {
            const auto* k0 = reinterpret_cast<const char*>(key_rows(start));
            // One request per cache line: dimension rows are bs elements apart.
            const int dim_bytes = bs * static_cast<int>(sizeof(T));
            const int dim_step = dim_bytes >= kLine ? 1 : kLine / dim_bytes;
            for (int d = 0; d < hd; d += dim_step) prefetch_l2(k0 + size_t(d) * bs * sizeof(T));
        }
        if (quantized) prefetch_l2(key_scales(max_of(start, first_read)));
    };
    auto prefetch_values = [&](int start) {
        const int n_keys = min_of(kLanes, last + 1 - start);
        const int from = max_of(start, first_read);
        if (whole_chunks) {
            // The chunk's rows are one run in its block (V is head-major):
            // one request per line of it, not a pointer per row.
            if (from >= start + n_keys) return;
            const auto* begin = reinterpret_cast<const char*>(value_row(from));
            const auto* end = begin + size_t(start + n_keys - from) * row_bytes;
            for (const char* p = begin - reinterpret_cast<uintptr_t>(begin) % kLine; p < end; p += kLine)
                prefetch_l2(p);
            if (quantized) prefetch_l2(value_scale(from));
            return;
        }
        // Blocks of fewer than kLanes slots: row by row.
        const T* rows[kLanes];
        const uint16_t* scales[kLanes];
        chunk_values(start, n_keys, rows, scales);
        for (int j = max_of(0, first_read - start); j < n_keys; ++j) {
            const auto* row = reinterpret_cast<const char*>(rows[j]);
            for (int off = 0; off < row_bytes; off += kLine) prefetch_l2(row + off);
            if (quantized) prefetch_l2(scales[j]);
        }
    };
    for (int c = first_chunk; c < first_chunk + kSoftmaxKeys; c += kLanes) prefetch_keys(c), prefetch_values(c);
    for (int block_start = first_chunk; block_start <= last;) {
        const int block_end = min_of(last + 1, (block_start / kSoftmaxKeys + 1) * kSoftmaxKeys);
        // Scores of every query for the block's chunks, kScoreChunks chunks
        // at a time (one at the block's end); lanes a query does not see are -inf.
        for (int group_start = block_start; group_start < block_end;) {
            const int n_chunks = block_end - group_start >= kScoreChunks * kLanes ? kScoreChunks : 1;
            const int group_end = min_of(block_end, group_start + n_chunks * kLanes);
            const T* k_chunk[kScoreChunks];         // in place: dimension 0 of each chunk's keys, d * bs apart
            Vec key_scale[kScoreChunks];            // int8: each key's scale, applied to its scores
            for (int c = 0; c < n_chunks; ++c) {
                const int chunk_start = group_start + c * kLanes;
                prefetch_keys(chunk_start + kSoftmaxKeys);
                const int n_keys = min_of(kLanes, block_end - chunk_start);
                float* kt_c = kt_chunk[c];
                key_scale[c] = splat(1.0f);
                if (whole_chunks) {
                    k_chunk[c] = key_rows(chunk_start);
                    if (quantized) key_scale[c] = widen_halves(key_scales(chunk_start));
                } else {
                    for (int j = 0; j < kLanes; ++j) {
                        // Pad with a real, readable key; masked below.
                        const int p = max_of(first_read, chunk_start + min_of(j, n_keys - 1));
                        const T* k0 = key_rows(p);
                        for (int d = 0; d < hd; ++d) kt_c[d * kLanes + j] = to_float(k0[size_t(d) * bs]);
                        if (quantized) key_scale[c][j] = half_to_float(*key_scales(p));
                    }
                }
            }
            for (int q0 = 0; q0 < nq; q0 += kScoreQueries) {
                const int n = min_of(kScoreQueries, nq - q0);
                // Query rows that see none of the chunks are skipped (their lanes are never read).
                bool any = false;
                for (int qi = q0; qi < q0 + n; ++qi)
                    any = any || (pos[qi] >= group_start && seen_from(qi) < group_end);
                if (!any) continue;
                Vec sc[kScoreQueries][kScoreChunks];
                const float* qs = &q[size_t(q0) * hd];
                if (whole_chunks)
                    chunk_scores_of(n, n_chunks, k_chunk, size_t(bs), qs, hd, sc,
                                    std::make_integer_sequence<int, kScoreQueries>{});
                else
                    chunk_scores_of(n, n_chunks, kt_chunk, size_t(kLanes), qs, hd, sc,
                                    std::make_integer_sequence<int, kScoreQueries>{});
                for (int i = 0; i < n; ++i)
                    for (int c = 0; c < n_chunks; ++c) {
                        const int qi = q0 + i, chunk_start = group_start + c * kLanes;
                        // Causal: this query sees keys up to its own position, and with a
                        // window none before pos - window + 1: lanes [first, visible).
                        const int visible = min_of(block_end - chunk_start, pos[qi] + 1 - chunk_start);
                        const int first = max_of(0, seen_from(qi) - chunk_start);
                        Vec v = sc[i][c];
                        if (quantized) v *= key_scale[c];
                        if (a.softcap > 0.0f) v = a.softcap * tanh_lanes(v / a.softcap);
                        const IVec lane = lane_index();
                        v = ((lane < visible) & (lane >= first)) ? v : splat(-INFINITY);
                        store(&s[size_t(qi) * kSoftmaxKeys + (chunk_start - block_start)], v);
                    }
            }
            group_start = group_end;
        }
        // Per query: the block's maximum, one rescaling of what it has so
        // far, the weights (exactly 0 on masked lanes) and their sum.
        for (int qi = 0; qi < nq; ++qi) {
            const int lo = max_of(block_start, seen_from(qi)), hi = min_of(block_end, pos[qi] + 1);
            if (lo >= hi) continue;
            float* sq = &s[size_t(qi) * kSoftmaxKeys];
            const int c_lo = (lo - block_start) / kLanes * kLanes, c_hi = hi - block_start;
            Vec vmax = splat(-INFINITY);
            for (int c = c_lo; c < c_hi; c += kLanes) {
                const Vec v = load(sq + c);
                vmax = v > vmax ? v : vmax;
            }
            const float new_max = max_of(m[qi], max_lane(vmax));
            const float correction = fast_exp(m[qi] - new_max);
            if (correction != 1.0f) {
                Vec* oq = reinterpret_cast<Vec*>(&o[size_t(qi) * hd]);
                for (int c = 0; c < hd_vecs; ++c) oq[c] *= correction;
                l[qi] *= correction;
            }
            m[qi] = new_max;
            Vec total{};
            for (int c = c_lo; c < c_hi; c += kLanes) {
                const Vec v = load(sq + c);
                const Vec w = v == -INFINITY ? Vec{} : fast_exp(v - new_max);
                store(sq + c, w);
                total += w;
            }
            l[qi] += sum_lanes(total);
        }
        // o += sum_j w_j * V_j, chunk by chunk, for the queries of one
        // position (a GQA group's heads) at once: they weight the same keys.
        for (int chunk_start = block_start; chunk_start < block_end; chunk_start += kLanes) {
            prefetch_values(chunk_start + kSoftmaxKeys);
            const int n_keys = min_of(kLanes, block_end - chunk_start);
            // Only keys below n_keys are ever weighted (visible <= n_keys).
            const T* rows[kLanes];
            const uint16_t* scale_at[kLanes];
            float scales[kLanes];
            chunk_values(chunk_start, n_keys, rows, scale_at);
            if (quantized)
                for (int j = max_of(0, first_read - chunk_start); j < n_keys; ++j) scales[j] = half_to_float(*scale_at[j]);
            // The keys of the chunk query qi weights: [first, visible).
            auto first_of = [&](int qi) { return max_of(0, seen_from(qi) - chunk_start); };
            auto visible_of = [&](int qi) { return min_of(n_keys, pos[qi] + 1 - chunk_start); };
            for (int q0 = 0; q0 < nq;) {
                const int first = first_of(q0), visible = visible_of(q0);
                int n = 1;
                while (n < kValueQueries && q0 + n < nq && first_of(q0 + n) == first && visible_of(q0 + n) == visible)
                    ++n;
                if (visible > first)
                    add_values_of(n, rows, scales, first, visible,
                                  &s[size_t(q0) * kSoftmaxKeys + (chunk_start - block_start)], &o[size_t(q0) * hd], hd,
                                  std::make_integer_sequence<int, kValueQueries>{});
                q0 += n;
            }
        }
        block_start = block_end;
    }
    if (tile.partial != nullptr) {
        float* out = tile.partial;
        std::memcpy(out, o, sizeof(float) * size_t(nq) * hd);
        std::memcpy(out + size_t(nq) * hd, m, sizeof(float) * nq);
        std::memcpy(out + size_t(nq) * (hd + 1), l, sizeof(float) * nq);
        return;
    }
    for (int64_t t = t_begin; t < t_end; ++t)
        for (int g = 0; g < group; ++g) {
            const int qi = static_cast<int>(t - t_begin) * group + g;
            float* dst = a.out + (t * a.n_heads + kv_head * group + g) * hd;
            const float inv = attention_normaliser(a, kv_head * group + g, m[qi], l[qi]);
            for (int d = 0; d < hd; ++d) dst[d] = o[size_t(qi) * hd + d] * inv;
        }
}

}  // namespace

void attention_tile(const PagedAttention& a, const AttentionTile& tile) {
    switch (a.kv_dtype) {
        case KvDtype::F32: attention_tile_impl<float>(a, tile); break;
        case KvDtype::F16: attention_tile_impl<uint16_t>(a, tile); break;
        case KvDtype::I8: attention_tile_impl<int8_t>(a, tile); break;
    }
}

void silu_mul(float* gate, const float* up, int64_t n) { map_lanes(gate, up, n, silu_mul_lanes); }

void gelu_tanh_mul(float* gate, const float* up, int64_t n) { map_lanes(gate, up, n, gelu_tanh_mul_lanes); }

void soft_cap(float* x, int64_t n, float cap) {
    map_lanes(x, nullptr, n, [cap](Vec v, Vec) { return cap * tanh_lanes(v / cap); });
}

float sum_exp(const float* x, int64_t n, float shift) {
    Vec acc{};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) acc += fast_exp(load(x + i) - shift);
    float sum = sum_lanes(acc);
    for (; i < n; ++i) sum += fast_exp(x[i] - shift);
    return sum;
}

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    const float sum = dot(x, x, static_cast<int>(n));
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void set_ops(IsaKernels& k) {
    k.attention_tile = attention_tile;
    k.silu_mul = silu_mul;
    k.gelu_tanh_mul = gelu_tanh_mul;
    k.soft_cap = soft_cap;
    k.sum_exp = sum_exp;
    k.rms_norm = rms_norm;
}

}  // namespace vllm::kernels::VLLM_OPS_NAMESPACE
