// A Gated DeltaNet linear-attention layer (Qwen3.5, transformers'
// Qwen3_5GatedDeltaNet), over a batch of sequences each with its own
// recurrent state: the q/k/v projection through a short causal conv (its
// conv state: the last conv_kernel - 1 inputs) and SiLU, q and k
// L2-normalised per head, the gated delta rule (delta_rule.h: the chunked
// form for a run of several tokens, the recurrent step for one) with
// decay g = -exp(A_log) softplus(alpha + dt_bias) and beta = sigmoid(b),
// then per value head an RMS norm times SiLU of the output gate z, and the
// output projection.
//
// A request's state sits in one slot of RecurrentStates: the block the
// recurrent KV cache group (core/kv_cache_group.h) gave the request, which
// the slice's block table for that group names as its only entry. A slice
// starting at position 0 starts from a zero state; every later slice
// continues the slot's state (chunked prefill, decode), so a request must
// run its tokens in order, each once: the engine turns prefix caching and
// speculative decoding off for such models (engine.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kv_cache/kv_cache.h"
#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// The linear layers' states, per slot (a request): for each linear layer in
// layer order, the conv state [conv_kernel - 1][channels] (oldest input
// first) and the delta-rule state [v_heads][dk][dv]. A slot's memory is
// allocated at its first use and kept for the next request given the slot
// (the group's pool bounds the slots, so this is at most max_num_seqs of
// them: ModelConfig::recurrent_state_bytes() each, what kv_cache_plan counts).
class RecurrentStates {
public:
    explicit RecurrentStates(const ModelConfig& c);
    // Layer l's state in `slot` (allocated on first use).
    float* layer_state(int32_t slot, int layer);

private:
    int64_t layer_floats_;
    std::vector<int> linear_index_;  // per layer: its index among the linear layers, or -1
    int n_linear_ = 0;
    std::vector<std::unique_ptr<float[]>> slots_;
};

// Scratch of the layer, sized to the batch (kept across forwards).
struct GatedDeltaNetScratch {
    std::vector<float> mixed, conv, z, b, a, core, decay_log, beta;
    std::vector<std::vector<float>> chunk;  // per worker of the delta rule
};

// xn: [tokens][dim], the layer's normed input, overwritten with its output.
// group: the recurrent KV cache group's index in the slices' block tables.
void gated_delta_net(const ModelConfig& c, const LayerWeights& w, int layer, const std::vector<SequenceSlice>& batch,
                     int group, float* xn, RecurrentStates& states, GatedDeltaNetScratch& s, ThreadPool& pool);

}  // namespace vllm
