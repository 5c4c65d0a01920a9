// Everything between the q/k/v projections and attention, per head vector
// in one pass: the qkv bias (Qwen2), then for q and k the q/k RMS norm
// (Qwen3, Gemma 3; OLMoE's over the whole q and k rows first) and the rotation (rotary.h).
#pragma once
#include <cstdint>

#include "model/blocks/rotary.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// q: [n_tokens][n_heads][head_dim], k and v: [n_tokens][n_kv_heads][head_dim],
// modified in place; `angles` filled for the same n_tokens positions.
// `rotary` false: the layer attends without RoPE (SmolLM3's every 4th).
void finish_attention_heads(const ModelConfig& c, const LayerWeights& w, const RotaryAngles& angles, bool rotary,
                            int64_t n_tokens, float* q, float* k, float* v, ThreadPool& pool);

}  // namespace vllm
