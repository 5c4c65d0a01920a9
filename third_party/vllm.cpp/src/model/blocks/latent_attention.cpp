#include "model/blocks/latent_attention.h"

#include "dtype/half.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"
#include "model/blocks/norms.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace vllm {

namespace {

template <typename T>
void grow(std::vector<T>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// One matmul per head: out + h * n_tokens * w[h].rows = w[h] of in + h *
// n_tokens * w[h].cols, for every head h (inputs and outputs head-major).
void per_head_matmuls(const std::vector<kernels::QuantMatrix>& w, const float* in, int64_t n_tokens, float* out,
                      ThreadPool& pool) {
    std::vector<kernels::GroupedMatmul> jobs;
    for (size_t h = 0; h < w.size(); ++h)
        jobs.push_back({&w[h], in + int64_t(h) * n_tokens * w[h].cols, n_tokens, out + int64_t(h) * n_tokens * w[h].rows});
    kernels::matmul_grouped(jobs, pool);
}

// Query heads per work item of the attention: a group reads each cached row
// once (16 heads: DeepSeek-V2-Lite's, so 4 items for a decode step's token).
constexpr int kHeadsPerItem = 4;

// out[p] = the cached row of position p (width floats), for p < context:
// the rows as stored, rounded to the cache's element type. A block's K is
// [width][block_size] (kv_cache.h, one KV head): F32 and F16 blocks are
// transposed block by block (the slot-minor layout read a row at a time
// would stride through every block once per position); I8 rows go
// through the cache's reference decoding.
void gather_cached_rows(const KVCache& cache, int layer, const int32_t* table, int64_t context, int width, float* out,
                        ThreadPool& pool) {
    const int bs = cache.block_size();
    const int64_t blocks = (context + bs - 1) / bs;
    pool.parallel_for(blocks, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
            const int slots = static_cast<int>(std::min<int64_t>(bs, context - b * bs));
            float* rows = out + b * bs * width;
            const unsigned char* block = cache.key_block(layer, table[b]);
            if (cache.dtype() == KvDtype::F32) {
                const float* k = reinterpret_cast<const float*>(block);
                for (int d = 0; d < width; ++d)
                    for (int s = 0; s < slots; ++s) rows[s * width + d] = k[d * bs + s];
            } else if (cache.dtype() == KvDtype::F16) {
                const uint16_t* k = reinterpret_cast<const uint16_t*>(block);
                for (int d = 0; d < width; ++d)
                    for (int s = 0; s < slots; ++s) rows[s * width + d] = half_to_float(k[d * bs + s]);
            } else {
                for (int s = 0; s < slots; ++s) cache.read_key(layer, table[b], s, rows + s * width);
            }
        }
    }, std::max<int64_t>(1, kMinParallelFloats / (int64_t(bs) * width)));
}

}  // namespace

void latent_attention_heads(const float* q_latent, int64_t q_latent_stride, const float* q_rope, int64_t q_rope_stride,
                            int n_heads, const float* keys, int64_t n_keys, int kv_lora, int rope_dim, float scale,
                            float* scores, float* out_latent, int64_t out_stride) {
    const int64_t width = kv_lora + rope_dim;
    for (int64_t j = 0; j < n_keys; ++j) {
        const float* key = keys + j * width;
        for (int h = 0; h < n_heads; ++h)
            scores[h * n_keys + j] = scale * (kernels::dot_f32(q_latent + h * q_latent_stride, key, kv_lora) +
                                              kernels::dot_f32(q_rope + h * q_rope_stride, key + kv_lora, rope_dim));
    }
    for (int h = 0; h < n_heads; ++h) {
        float* score = scores + h * n_keys;
        const float max = *std::max_element(score, score + n_keys);
        float sum = 0.0f;
        for (int64_t j = 0; j < n_keys; ++j) sum += score[j] = std::exp(score[j] - max);
        for (int64_t j = 0; j < n_keys; ++j) score[j] /= sum;
        std::fill_n(out_latent + h * out_stride, kv_lora, 0.0f);
    }
    for (int64_t j = 0; j < n_keys; ++j)
        for (int h = 0; h < n_heads; ++h)
            kernels::axpy_f32(scores[h * n_keys + j], keys + j * width, out_latent + h * out_stride, kv_lora);
}

void latent_attention_layer(const ModelConfig& c, const LayerWeights& w, const std::vector<SequenceSlice>& batch,
                            int layer, const std::vector<int32_t>& positions, const RotaryAngles& angles, float* x,
                            KVCache& cache, LatentScratch& s, ThreadPool& pool) {
    const int64_t T = static_cast<int64_t>(positions.size());
    const int H = c.n_heads, nope = c.qk_nope_dim, rope = c.rope_dim, q_head = nope + rope;
    const int L = c.kv_lora_rank, width = L + rope, V = c.v_head_dim, pairs = rope / 2;
    grow(s.q, T * H * q_head);
    grow(s.rows, T * width);
    grow(s.q_nope, int64_t(H) * T * nope);
    grow(s.q_latent, int64_t(H) * T * L);
    grow(s.o_latent, int64_t(H) * T * L);
    grow(s.o_heads, int64_t(H) * T * V);
    grow(s.attn, T * H * V);

    // Projections: the query (through its low-rank bottleneck and norm where
    // the model has one) and the latent row.
    if (c.q_lora_rank > 0) {
        grow(s.q_a, T * c.q_lora_rank);
        kernels::matmul_shared({{&w.wq_a, s.q_a.data()}, {&w.wkv_a, s.rows.data()}}, x, T, pool);
        rms_norm_rows(s.q_a.data(), w.q_a_norm.data(), s.q_a.data(), T, c.q_lora_rank, c.rms_eps, pool);
        kernels::matmul(w.wq_b, s.q_a.data(), T, s.q.data(), pool);
    } else {
        kernels::matmul_shared({{&w.wq, s.q.data()}, {&w.wkv_a, s.rows.data()}}, x, T, pool);
    }
    // The latent's norm, the rotations (adjacent pairs: DeepSeek's layout in
    // both sources), and each head's q_nope gathered head-major for W_UK.
    pool.parallel_for(T, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            float* row = s.rows.data() + t * width;
            kernels::rms_norm(row, w.kv_a_norm.data(), row, L, c.rms_eps);
            const float* cs = angles.cos.data() + t * pairs;
            const float* sn = angles.sin.data() + t * pairs;
            rotate(row + L, cs, sn, pairs, /*halves=*/false);
            for (int h = 0; h < H; ++h) {
                float* q = s.q.data() + (t * H + h) * q_head;
                rotate(q + nope, cs, sn, pairs, false);
                std::copy_n(q, nope, s.q_nope.data() + (h * T + t) * nope);
            }
        }
    });
    per_head_matmuls(w.k_b, s.q_nope.data(), T, s.q_latent.data(), pool);

    if (cache.shape(layer) != KvLayerShape{1, width, 0})
        throw_runtime("internal error: layer " + std::to_string(layer) + "'s KV cache does not hold latent rows of " +
                      std::to_string(width) + " (K only)");
    const int bs = cache.block_size(), group = cache.group_of(layer);
    int64_t t0 = 0;
    for (const SequenceSlice& sl : batch) {
        const int32_t* table = sl.block_tables[group];
        for (int i = 0; i < sl.n_tokens; ++i) {
            const int pos = sl.start_pos + i;
            cache.store_key(layer, table[pos / bs], pos % bs, s.rows.data() + (t0 + i) * width);
        }
        // The sequence's cached rows as the cache holds them (rounded to its
        // element type), this batch's included, then every (token, head).
        const int64_t context = sl.start_pos + sl.n_tokens;
        grow(s.keys, context * width);
        gather_cached_rows(cache, layer, table, context, width, s.keys.data(), pool);
        // Work items: a token's heads in groups of up to kHeadsPerItem (a
        // decode step's one token still spreads over the threads); a
        // group reads each key row once for all its heads.
        const int per_item = std::min(H, kHeadsPerItem), groups = (H + per_item - 1) / per_item;
        pool.parallel_for(int64_t(sl.n_tokens) * groups, [&](int64_t begin, int64_t end) {
            std::vector<float> scores(static_cast<size_t>(per_item * context));
            for (int64_t item = begin; item < end; ++item) {
                const int64_t t = t0 + item / groups, h = item % groups * per_item;
                latent_attention_heads(s.q_latent.data() + (h * T + t) * L, T * L,
                                       s.q.data() + (t * H + h) * q_head + nope, q_head,
                                       static_cast<int>(std::min<int64_t>(per_item, H - h)), s.keys.data(),
                                       positions[t] + 1, L, rope, c.attn_scale, scores.data(),
                                       s.o_latent.data() + (h * T + t) * L, T * L);
            }
        });
        t0 += sl.n_tokens;
    }

    // Each head's values from its weighted latent (W_UV), back to token-major
    // rows, and the output projection.
    per_head_matmuls(w.v_b, s.o_latent.data(), T, s.o_heads.data(), pool);
    for (int h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
            std::copy_n(s.o_heads.data() + (h * T + t) * V, V, s.attn.data() + (t * H + h) * V);
    kernels::matmul(w.wo, s.attn.data(), T, x, pool);
}

}  // namespace vllm
