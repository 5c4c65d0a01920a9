// Attention of one layer over the paged KV cache: the batch's new K/V are
// stored first, then every query attends to its sequence's cached keys
// through the block table of the layer's KV cache group (causal, within
// the layer's sliding window if it has one, scores soft-capped if the
// model caps them, a per-head sink logit in the softmax if the layer has
// one). Long key ranges are split and merged (flash-decoding)
// at fixed key positions, so results are batch-invariant.
#pragma once
#include <cstdint>
#include <vector>

#include "kv_cache/kv_cache.h"
#include "model/decoder_model.h"
#include "model/model_config.h"
#include "util/thread_pool.h"

namespace vllm {

// q: [tokens][n_heads][head_dim]; k, v: [tokens][n_kv_heads][head_dim];
// out: [tokens][n_heads][head_dim]; positions: each batch token's position.
// sinks: the layer's attention sinks, one logit per query head (gpt-oss;
// kernels::PagedAttention::sinks), or nullptr. k and v nullptr: nothing is
// stored (`layer` is the one whose cache another layer reads: Gemma 4's
// KV sharing; the queries attend over what it stored in this step too).
void paged_attention(const ModelConfig& c, const std::vector<SequenceSlice>& batch, int layer,
                     const std::vector<int32_t>& positions, const float* q, const float* k, const float* v,
                     float* out, KVCache& cache, ThreadPool& pool, const float* sinks = nullptr);

// Refuses a batch in which some layer would read a kNullBlock entry
// (an internal error: the KV cache manager frees only what no query reads).
void check_block_tables(const ModelConfig& c, const std::vector<SequenceSlice>& batch, const KVCache& cache);

}  // namespace vllm
