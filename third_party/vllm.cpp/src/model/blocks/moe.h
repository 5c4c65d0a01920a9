// The mixture-of-experts feed-forward block (Qwen2/3-MoE, Mixtral, OLMoE,
// Granite MoE): a router scores every expert per token, the top k are run
// and their outputs summed with the (optionally renormalised) scores, plus a
// shared expert where the model has one (Qwen2-MoE gates it by a sigmoid).
//
// The experts run grouped, as llama.cpp's mul_mat_id: the tokens routed to
// one expert are gathered and go through its gated MLP in one matmul per
// matrix, so prefill reads each routed expert once and a decode step reads
// only its k experts. Each token's result is summed in top-k rank order,
// and the kernels give a row the same result whatever rows share its
// matmul, so a token's output does not depend on the batch it is in.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "model/blocks/lora.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// The experts of one layer: expert e is gate[e], up[e], down[e], plus,
// where the model has them (gpt-oss), a bias per expert and matrix:
// expert e's at e * (its matrix's rows) of gate_bias, up_bias, down_bias.
struct ExpertMatrices {
    const std::vector<kernels::QuantMatrix>& gate;
    const std::vector<kernels::QuantMatrix>& up;
    const std::vector<kernels::QuantMatrix>& down;
    const float* gate_bias = nullptr;
    const float* up_bias = nullptr;
    const float* down_bias = nullptr;
};

// The block's buffers, grown to the largest batch seen and kept.
struct MoeScratch {
    std::vector<float> logits;       // [n_tokens][n_experts]: router logits, then scores
    std::vector<int32_t> picked;     // [n_tokens][k]: expert ids by rank
    std::vector<float> weights;      // [n_tokens][k]
    std::vector<int64_t> slots;       // the (token * k + rank) slots, grouped by expert, in token order
    std::vector<int64_t> row_of_slot; // slot -> its row in rows_in / rows_out
    std::vector<float> rows_in, gate, up;  // [slots][dim], [slots][expert ffn]: gathered rows, MLP buffers
    std::vector<float> rows_out;      // [slots][dim]: each slot's unweighted expert output
    std::vector<float> shared_out;    // [n_tokens][dim]
    std::vector<float> shared_weight; // [n_tokens]: the shared expert's weight (its sigmoid gate, else 1)
    std::vector<int64_t> token_of_row;  // [slots]: LoRA's view of the gathered rows
    std::vector<int32_t> expert_of_row;
};

// The router: picked[t * k + r] is token t's r-th expert (highest score
// first; equal scores: the lower id) and weights[t * k + r] its weight.
// `logits` [n_tokens][n_experts] (the router's bias added, where it has
// one) is turned into the scores in place.
void route_tokens(const ModelConfig& c, float* logits, int64_t n_tokens, int32_t* picked, float* weights);

// The grouped expert matmuls: s.rows_out[s.row_of_slot[t * k + r] * dim]
// = expert picked[t * k + r]'s gated MLP of x[t], for every token t and
// rank r. Experts no token picked are not read.
// `lora`: the batch's adapters' expert pairs beside each expert's matmuls
// (blocks/lora.h; nullptr: none).
void grouped_expert_mlp(const ExpertMatrices& experts, FfnActivation activation, const float* x, int64_t n_tokens,
                        int k, const int32_t* picked, MoeScratch& s, ThreadPool& pool,
                        const LoraSite* lora = nullptr);

// x: [n_tokens][dim] in; out: [n_tokens][dim] (may alias x).
void moe_mlp(const ModelConfig& c, const LayerWeights& w, const float* x, int64_t n_tokens, float* out, MoeScratch& s,
             ThreadPool& pool, const LoraSite* lora = nullptr);

}  // namespace vllm
