// The body of ops.h's kernels. The attention core and silu_mul are written
// with GCC/Clang vector extensions (16-float vectors), which every target
// lowers to its own registers (one AVX-512 register, two AVX2 ones, four
// SSE/NEON ones), so the same source gives dependable SIMD code on each ISA;
// rms_norm is a plain loop the compiler vectorizes. Included by one .cpp per
// instruction set inside a distinct namespace, so each copy is compiled
// with that ISA's flags.
// Expects VLLM_OPS_NAMESPACE to be defined by the including file, and in
// that namespace `widen_halves(const uint16_t* p)`: 16 IEEE halves at p (no
// alignment) as 16 floats, a 64-byte float vector (the type of Vec below),
// with that ISA's conversion instructions (GCC's generic conversion of half
// vectors goes one element at a time), for half KV caches. Half to float is
// exact, so every build gets the same floats from the cache.
// Likewise `widen_int8(const int8_t* p)`: 16 int8 as 16 floats (exact), for
// int8 KV caches (GCC's generic conversion of a byte vector goes one
// element at a time here too).
// No standard containers or other out-of-line templates here: the linker
// keeps one copy of each template instantiation, and an AVX-512 copy could
// end up serving the scalar path on a CPU without AVX-512. (Templates in the
// unnamed namespace below are local to each file, so they are safe.)
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dtype/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

// The vector helpers below are internal (inlined, file-local), so GCC's note
// that passing 64-byte vectors by value differs between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vllm::kernels::VLLM_OPS_NAMESPACE {

namespace {

constexpr int kLanes = kAttentionHeadDimMultiple;  // accumulator width: one AVX-512 register, two AVX2 ones

inline float max_of(float a, float b) { return a > b ? a : b; }
inline int min_of(int a, int b) { return a < b ? a : b; }
inline int max_of(int a, int b) { return a > b ? a : b; }

inline float dot(const float* a, const float* b, int n) {
    float acc[kLanes] = {};
    int i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
    float sum = 0.0f;
    for (int l = 0; l < kLanes; ++l) sum += acc[l];
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

// 16 floats as one value. `VecU` is the same with 4-byte alignment, for
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

// fast_exp on 16 lanes at once (same polynomial).
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

// sigmoid(x) = 1 / (1 + e^-x) on 16 lanes, branch-free, computed from
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

// Applies `lanes` (Vec -> Vec) to x[0, n) in place, 16 at a time. The last
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

// A cache element (float, half or int8) as a float, and 16 consecutive ones.
inline float to_float(float x) { return x; }
inline float to_float(uint16_t h) { return half_to_float(h); }
inline float to_float(int8_t q) { return q; }
inline Vec load16(const float* p) { return load(p); }
inline Vec load16(const uint16_t* p) { return widen_halves(p); }
inline Vec load16(const int8_t* p) { return widen_int8(p); }

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
    const int kv_stride = a.n_kv_heads * hd;
    // Elements from one block to the next (int8: the scales included), and
    // from a block's start to its scales.
    const size_t block_elems = size_t(bs) * kv_token_bytes(a.n_kv_heads, hd, a.kv_dtype) / sizeof(T);
    const size_t scales_at = size_t(bs) * kv_stride;
    // Query vectors of this tile: (token, head-in-group), pre-scaled.
    const int nq = static_cast<int>(t_end - t_begin) * group;
    float q[kAttentionMaxQueries * kAttentionMaxHeadDim];
    alignas(64) float o[kAttentionMaxQueries * kAttentionMaxHeadDim];
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
    // of kLanes slots a chunk is one 16-half load (widened) per dimension;
    // smaller blocks gather it. Lanes past the chunk's keys are masked below,
    // and every lane's arithmetic is its own, so results do not depend on
    // them. Half value rows are widened to floats once per chunk into `vf`,
    // shared by all the tile's queries; float rows are read in place.
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
    const int hd_vecs = hd / kLanes;
    const bool whole_chunks = bs % kLanes == 0;
    Vec kt[kAttentionMaxHeadDim];
    alignas(64) float vf[sizeof(T) == sizeof(float) ? 1 : kLanes * kAttentionMaxHeadDim];  // [key of chunk][dim]
    auto key_rows = [&](int p) {  // dimension 0 of key p for this head; dimension d is d * bs further
        return k_cache + size_t(block_table[p / bs]) * block_elems + size_t(kv_head) * hd * bs + p % bs;
    };
    auto value_row = [&](int p) {
        return v_cache + size_t(block_table[p / bs]) * block_elems + size_t(p % bs) * kv_stride + size_t(kv_head) * hd;
    };
    // int8 only: the scale of key p for this head (the next keys of its block follow), and of value p.
    auto key_scales = [&](int p) {
        return reinterpret_cast<const uint16_t*>(k_cache + size_t(block_table[p / bs]) * block_elems + scales_at) +
               size_t(kv_head) * bs + p % bs;
    };
    auto value_scale = [&](int p) {
        return reinterpret_cast<const uint16_t*>(v_cache + size_t(block_table[p / bs]) * block_elems + scales_at) +
               size_t(p % bs) * a.n_kv_heads + kv_head;
    };
    // The chunk's keys and values, requested ahead of use: cache blocks are
    // scattered over memory, where the hardware prefetchers lose the trail,
    // and decode attention otherwise waits on memory for most of its time.
    constexpr int kLine = 64;
    const int row_bytes = hd * static_cast<int>(sizeof(T));
    auto prefetch_chunk = [&](int start) {
        if (start > last) return;
        const int n_keys = min_of(kLanes, last + 1 - start);
        if (whole_chunks) {
            const auto* k0 = reinterpret_cast<const char*>(key_rows(start));
            const int chunk_bytes = kLanes * static_cast<int>(sizeof(T));  // of one dimension
            const int dim_step = chunk_bytes >= kLine ? 1 : kLine / chunk_bytes;
            for (int d = 0; d < hd; d += dim_step) __builtin_prefetch(k0 + size_t(d) * bs * sizeof(T));
        }
        if (quantized) __builtin_prefetch(key_scales(max_of(start, first_read)));
        for (int j = max_of(0, first_read - start); j < n_keys; ++j) {
            const auto* row = reinterpret_cast<const char*>(value_row(start + j));
            for (int off = 0; off < row_bytes; off += kLine) __builtin_prefetch(row + off);
            if (quantized) __builtin_prefetch(value_scale(start + j));
        }
    };
    prefetch_chunk(first_chunk);
    for (int chunk_start = first_chunk; chunk_start <= last; chunk_start += kLanes) {
        prefetch_chunk(chunk_start + kLanes);
        const int n_keys = min_of(kLanes, last + 1 - chunk_start);
        // Only keys below n_keys are ever weighted (visible <= n_keys).
        const float* values[kLanes];
        for (int j = max_of(0, first_read - chunk_start); j < n_keys; ++j) {
            const T* row = value_row(chunk_start + j);
            if constexpr (sizeof(T) == sizeof(float)) {
                values[j] = row;
            } else {
                // int8 rows get their scale here, so the weighted sum below is the same for every type.
                const float scale = quantized ? half_to_float(*value_scale(chunk_start + j)) : 1.0f;
                for (int c = 0; c < hd_vecs; ++c)
                    store(&vf[size_t(j) * hd + c * kLanes], quantized ? load16(row + c * kLanes) * scale
                                                                      : load16(row + c * kLanes));
                values[j] = &vf[size_t(j) * hd];
            }
        }
        Vec key_scale = splat(1.0f);  // int8: each key's scale, applied to its scores
        if (whole_chunks) {
            const T* k0 = key_rows(chunk_start);
            for (int d = 0; d < hd; ++d) kt[d] = load16(k0 + size_t(d) * bs);
            if (quantized) key_scale = widen_halves(key_scales(chunk_start));
        } else {
            for (int j = 0; j < kLanes; ++j) {
                // Pad with a real, readable key; masked below.
                const int p = max_of(first_read, chunk_start + min_of(j, n_keys - 1));
                const T* k0 = key_rows(p);
                for (int d = 0; d < hd; ++d) kt[d][j] = to_float(k0[size_t(d) * bs]);
                if (quantized) key_scale[j] = half_to_float(*key_scales(p));
            }
        }
        for (int qi = 0; qi < nq; ++qi) {
            // Causal: this query sees keys up to its own position, and with a
            // window none before pos - window + 1: lanes [first, visible).
            const int visible = min_of(n_keys, pos[qi] + 1 - chunk_start);
            const int first = a.window > 0 ? max_of(0, pos[qi] - a.window + 1 - chunk_start) : 0;
            if (visible <= first) continue;
            // Four partial sums keep four multiply-adds in flight.
            const float* qv = &q[size_t(qi) * hd];
            Vec s0{}, s1{}, s2{}, s3{};
            for (int d = 0; d < hd; d += 4) {
                s0 += qv[d] * kt[d];
                s1 += qv[d + 1] * kt[d + 1];
                s2 += qv[d + 2] * kt[d + 2];
                s3 += qv[d + 3] * kt[d + 3];
            }
            Vec sc = (s0 + s1) + (s2 + s3);
            if (quantized) sc *= key_scale;
            if (a.softcap > 0.0f) sc = a.softcap * tanh_lanes(sc / a.softcap);
            if (visible < kLanes) sc = lane_index() < visible ? sc : splat(-INFINITY);
            if (first > 0) sc = lane_index() >= first ? sc : splat(-INFINITY);
            const float new_max = max_of(m[qi], max_lane(sc));
            const float correction = fast_exp(m[qi] - new_max);
            Vec* oq = reinterpret_cast<Vec*>(&o[size_t(qi) * hd]);
            if (correction != 1.0f) {
                for (int c = 0; c < hd_vecs; ++c) oq[c] *= correction;
                l[qi] *= correction;
            }
            m[qi] = new_max;
            // Masked lanes give fast_exp's floor, ~1e-38, which vanishes
            // next to the largest weight, exp(0) = 1.
            const Vec weights = fast_exp(sc - new_max);
            alignas(64) float pr[kLanes];  // broadcast from memory below
            store(pr, weights);
            l[qi] += sum_lanes(weights);
            // o += sum_j pr[j] * V[j]: o stays in registers across the keys.
            // Four vectors of o at a time, so one key's multiply-adds are independent.
            int c = 0;
            for (; c + 4 <= hd_vecs; c += 4) {
                Vec a0 = oq[c], a1 = oq[c + 1], a2 = oq[c + 2], a3 = oq[c + 3];
                for (int j = first; j < visible; ++j) {
                    const float* v = values[j] + c * kLanes;
                    a0 += pr[j] * load(v);
                    a1 += pr[j] * load(v + kLanes);
                    a2 += pr[j] * load(v + 2 * kLanes);
                    a3 += pr[j] * load(v + 3 * kLanes);
                }
                oq[c] = a0, oq[c + 1] = a1, oq[c + 2] = a2, oq[c + 3] = a3;
            }
            for (; c < hd_vecs; ++c) {
                Vec acc = oq[c];
                for (int j = first; j < visible; ++j) acc += pr[j] * load(values[j] + c * kLanes);
                oq[c] = acc;
            }
        }
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
            const float inv = 1.0f / l[qi];
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
    k.rms_norm = rms_norm;
}

}  // namespace vllm::kernels::VLLM_OPS_NAMESPACE
