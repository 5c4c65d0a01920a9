// Attention of an encoder built of decoder layers (EmbeddingGemma): every
// token of a slice attends to every token of the same slice, before and
// after it (no causal mask), within a symmetric window on a sliding layer
// (|i - j| <= sliding_window / 2, as llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC
// and transformers' bidirectional sliding mask read the same config value).
// Each slice must be a request's whole prompt (start_pos 0): the engine runs
// an encoder's requests whole. The KV cache is neither read nor written.
#pragma once
#include <vector>

#include "model/decoder_model.h"
#include "model/model_config.h"
#include "util/thread_pool.h"

namespace vllm {

// q: [tokens][n_heads][head_dim]; k, v: [tokens][n_kv_heads][head_dim];
// out: [tokens][n_heads][head_dim], for layer `layer` of `c` (its window,
// grouped heads, attention scale and soft-cap). alibi_slopes: one per head,
// each score gets -slope * |i - j| (jina-bert-v2); nullptr: none.
void bidirectional_attention(const ModelConfig& c, const std::vector<SequenceSlice>& batch, int layer, const float* q,
                             const float* k, const float* v, float* out, ThreadPool& pool,
                             const float* alibi_slopes = nullptr);

// ALiBi's slope of each of n_heads heads with maximum bias max_bias, as
// llama.cpp computes them (heads past the largest power of two interleave
// a second series).
std::vector<float> alibi_slopes(int n_heads, float max_bias);

// Positions 0.. of each slice, after checking that every slice is a whole
// prompt within the model's positions, pooled, without logits: what an
// encoder's forward runs.
void whole_prompt_positions(const ModelConfig& c, const std::vector<SequenceSlice>& batch,
                            std::vector<int32_t>& positions);

}  // namespace vllm
