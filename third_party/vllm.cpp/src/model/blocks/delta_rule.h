// The gated delta rule of Gated DeltaNet (Qwen3.5's linear attention), one
// value head over a run of tokens, carrying its state S [dk][dv] from the
// previous run: per token t, with q_t (L2-normalised and scaled by
// 1/sqrt(dk)), k_t (L2-normalised), v_t, the decay's log g_t <= 0 and the
// write strength beta_t,
//     S = exp(g_t) S;  S += k_t (beta_t (v_t - S^T k_t))^T;  o_t = S^T q_t.
// Two forms, equal up to rounding (tests/test_delta_rule.cpp): the
// recurrent step, token by token (a decode step's one token), and the
// chunked form (prefill: transformers' torch_chunk_gated_delta_rule, the
// delta rule's updates within a chunk condensed by a unit lower-triangular
// solve, so the state is read and written once per chunk instead of once
// per token).
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

// One head's inputs over n_tokens tokens: token t's q at q + t * qk_stride
// (dk floats), its k likewise, its v at v + t * v_stride (dv floats), g and
// beta at g[t * gb_stride], beta[t * gb_stride]; its output to out + t *
// out_stride (dv floats).
struct DeltaRuleRun {
    int64_t n_tokens = 0;
    int dk = 0, dv = 0;
    const float *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *beta = nullptr;
    int64_t qk_stride = 0, v_stride = 0, gb_stride = 0;
    float* out = nullptr;
    int64_t out_stride = 0;
};

// Token by token; `state` [dk][dv] is read and left holding the state after
// the run.
void delta_rule_recurrent(const DeltaRuleRun& run, float* state);

// Chunks of `chunk` tokens (the last one shorter); the same contract.
// `scratch` is resized as needed (kept across calls to spare allocations).
void delta_rule_chunked(const DeltaRuleRun& run, float* state, int chunk, std::vector<float>& scratch);

}  // namespace vllm
