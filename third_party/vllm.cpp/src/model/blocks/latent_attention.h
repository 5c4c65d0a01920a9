// Multi-head latent attention (DeepSeek-V2's MLA) over the paged KV cache,
// in the absorbed form for prefill and decode alike. Per token the cache
// holds one row: the compressed latent c (kv_lora_rank floats, after its RMS
// norm) and the rotary key part k_rope (rope_dim floats, rotated), shared by
// every head; not the heads' K and V. A head's score against a cached token
// is scale * (q_nope . W_UK c + q_rope . k_rope) = scale * ((W_UK^T q_nope)
// . c + q_rope . k_rope): q_nope is absorbed through W_UK (k_b) into latent
// space once per query, so attention reads only the cached rows, and the
// head's output W_UV (sum_j p_j c_j) applies W_UV (v_b) once to the
// weighted latent. Prefill runs the same absorbed kernel as decode (no
// expansion to full K/V), so a token gets the same result in a prefill
// chunk, a decode step or any batch.
#pragma once
#include <cstdint>
#include <vector>

#include "kv_cache/kv_cache.h"
#include "model/blocks/rotary.h"
#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// The block's buffers, grown to the largest batch seen and kept.
struct LatentScratch {
    std::vector<float> q;         // [tokens][heads][qk_nope + rope]
    std::vector<float> q_a;       // [tokens][q_lora_rank]
    std::vector<float> rows;      // [tokens][kv_lora + rope]: the rows the cache stores
    std::vector<float> q_nope;    // [heads][tokens][qk_nope]
    std::vector<float> q_latent;  // [heads][tokens][kv_lora]: W_UK^T q_nope
    std::vector<float> o_latent;  // [heads][tokens][kv_lora]: sum_j p_j c_j
    std::vector<float> o_heads;   // [heads][tokens][v_head_dim]
    std::vector<float> attn;      // [tokens][heads * v_head_dim]
    std::vector<float> keys;      // one sequence's cached rows [context][kv_lora + rope], as floats
};

// The kernel, on plain pointers: n_heads query heads of one token against
// n_keys cached rows `keys` ([n_keys][kv_lora + rope_dim]: latent, then
// rotary part), head h's q_latent at q_latent + h * q_latent_stride, its
// q_rope at q_rope + h * q_rope_stride. scores: n_heads * n_keys floats of
// scratch; out_latent + h * out_stride = head h's softmax-weighted sum of
// the keys' latents (kv_lora floats). Each key row is read once for all
// the heads; each head sums its keys in order, so its result does not
// depend on the other heads or on anything else computed.
void latent_attention_heads(const float* q_latent, int64_t q_latent_stride, const float* q_rope, int64_t q_rope_stride,
                            int n_heads, const float* keys, int64_t n_keys, int kv_lora, int rope_dim, float scale,
                            float* scores, float* out_latent, int64_t out_stride);

// x: the layer's normed input [tokens][dim] in, its attention output (after
// the output projection) out. positions: each batch token's; angles filled
// for them. The batch's rows are stored into `cache` first (a token attends
// to the earlier tokens of its batch too).
void latent_attention_layer(const ModelConfig& c, const LayerWeights& w, const std::vector<SequenceSlice>& batch,
                            int layer, const std::vector<int32_t>& positions, const RotaryAngles& angles, float* x,
                            KVCache& cache, LatentScratch& s, ThreadPool& pool);

}  // namespace vllm
