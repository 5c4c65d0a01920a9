// The tensors of a decoder (every registered architecture's), read from a mapped model file.
// Matrices stay in their stored (quantized) type, copied out of the file
// (some rearranged for the matmul kernels: prepared); the token embedding
// and the experts of a mixture-of-experts model stay views into the file; small vectors (norms, biases) are copied to
// float because every step reads them whole.
#pragma once
#include <memory>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "model/model_config.h"
#include "util/huge_pages.h"

namespace vllm {

class ModelSource;
class LazyExperts;

struct LayerWeights {
    std::vector<float> attn_norm;
    kernels::QuantMatrix wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;          // empty unless config.traits.qkv_bias
    std::vector<float> q_norm, k_norm;      // empty unless config.traits.qk_norm (head_dim each)
    std::vector<float> ffn_norm;
    // The dense MLP; in a mixture-of-experts layer, the shared expert
    // (rows 0 when the model has none).
    kernels::QuantMatrix w_gate, w_up, w_down;
    // Mixture of experts (config.n_experts > 0): the router [n_experts, dim]
    // and each expert's matrices, views of their slices of the file's
    // stacked tensors (row layout, not copied: an expert no token routes to
    // is never read); Qwen2-MoE's shared-expert gate vector [dim].
    kernels::QuantMatrix router;
    std::vector<kernels::QuantMatrix> expert_gate, expert_up, expert_down;
    // The same experts as the kernels read them, each prepared the first
    // time a token routes to it (model/expert_preparation.h); null when
    // the kernels read the row layout. Shared by the layer's copies.
    std::shared_ptr<LazyExperts> lazy_experts;
    std::vector<float> shared_expert_gate;
    // gpt-oss (config.traits.output_bias, attn_sinks, expert_bias; else empty): the
    // attention output's bias [dim], the sinks [n_heads], the router's bias
    // [n_experts] and the experts' biases, expert e's at e * rows.
    std::vector<float> bo, attn_sinks, router_bias;
    std::vector<float> expert_gate_bias, expert_up_bias, expert_down_bias;  // [n_experts][ffn], [..][ffn], [..][dim]
    std::vector<float> post_attn_norm, post_ffn_norm;  // empty unless config.traits.post_norms
    // Gemma 4: the layer's output scale (layer_output_scale, 1 float; empty:
    // none); its per-layer embedding's gate [per_layer_embd_dim, dim],
    // projection [dim, per_layer_embd_dim] and norm [dim] (config.per_layer_embd_dim > 0).
    // A KV-sharing layer has no wk/wv/k_norm (rows 0, empty); a full layer
    // of a K=V model (attention_k_eq_v) no attn_v (values_are_keys: its
    // values are the k projection, before the k norm).
    bool values_are_keys = false;
    std::vector<float> output_scale;
    kernels::QuantMatrix per_layer_gate, per_layer_proj;
    std::vector<float> per_layer_post_norm;
    // Multi-head latent attention (config.is_mla()): wq is the query [heads *
    // (qk_nope + rope), dim], or rows 0 with the q_lora_rank bottleneck wq_a
    // [q_lora, dim], its norm, wq_b [heads * (qk_nope + rope), q_lora];
    // wkv_a [kv_lora + rope, dim] makes the latent and the rotary key part;
    // per head h, k_b[h] [kv_lora, qk_nope] takes a head's q_nope into latent
    // space and v_b[h] [v_head_dim, kv_lora] a latent to its values (views
    // of the file's 3-D attn_k_b / attn_v_b, not copied). wo is [dim, heads * v].
    kernels::QuantMatrix wq_a, wq_b, wkv_a;
    std::vector<float> q_a_norm, kv_a_norm;
    std::vector<kernels::QuantMatrix> k_b, v_b;
    // Qwen3.5's linear-attention layers (config.is_recurrent(l); such a
    // layer has no wq/wk/wv/wo): the q/k/v projection into the conv
    // (attn_qkv), the output gate z (attn_gate), beta and alpha per value
    // head (ssm_beta, ssm_alpha), the output projection (ssm_out); the conv
    // weights [channels][conv_kernel], the decay's bias (ssm_dt.bias) and
    // factor -exp(A_log) (ssm_a) per value head, the gated norm [head_dim].
    kernels::QuantMatrix w_linear_qkv, w_linear_z, w_beta, w_alpha, w_linear_out;
    std::vector<float> conv1d, ssm_dt, ssm_a, ssm_norm;
    // An encoder (config.traits.encoder, BERT): attn_norm and ffn_norm are
    // the LayerNorms after attention (attn_output_norm) and after the MLP
    // (layer_output_norm), these their biases; w_up / w_down the MLP (no
    // gate) with their biases; bq, bk, bv and bo the attention's.
    std::vector<float> attn_norm_bias, ffn_norm_bias, up_bias, down_bias;
};

struct ModelWeights {
    // Movable, not copyable: matrices point into `prepared`.
    ModelWeights() = default;
    ModelWeights(ModelWeights&&) = default;
    ModelWeights& operator=(ModelWeights&&) = default;
    ModelWeights(const ModelWeights&) = delete;
    ModelWeights& operator=(const ModelWeights&) = delete;

    kernels::QuantMatrix token_embedding;   // [vocab, dim]
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;
    kernels::QuantMatrix output;            // [vocab, dim]; the embedding when tied
    // The copies that layer and output matrices point into instead of the
    // file (matmul-ready, kernels::prepare_for_matmul, where the kernels
    // read another layout), on huge pages (util/huge_pages.h).
    HugePageArena prepared;
    // Optional per-pair RoPE frequency divisors (rope_freqs.weight, rope_dim / 2
    // floats; Llama 3.1+ "llama3" RoPE scaling). Empty when absent.
    std::vector<float> rope_freqs;
    // LongRoPE's two sets of such divisors (rope_factors_long/short.weight);
    // empty unless config.longrope_original_context.
    std::vector<float> rope_factors_long, rope_factors_short;
    // Gemma 4's per-layer token embeddings (config.per_layer_embd_dim > 0):
    // the table [vocab, n_layers * per_layer_embd_dim] (a view into the
    // file, like token_embedding), the projection of the token embedding to
    // the same width and the norm of each layer's part of it.
    kernels::QuantMatrix per_layer_token_embd, per_layer_model_proj;
    std::vector<float> per_layer_proj_norm;
    // An encoder's (config.traits.encoder) learned absolute positions
    // [context_length, dim], token type 0's row [dim] (every token is of
    // type 0) and the LayerNorm of the summed embeddings.
    kernels::QuantMatrix position_embedding;
    std::vector<float> token_type_row, embedding_norm, embedding_norm_bias;
    // Token type 1's row (a sentence pair's second segment; empty when the
    // model has one token type, as XLM-RoBERTa).
    std::vector<float> token_type_second_row;
    // A classification head (llama.cpp's cls / cls.output; transformers'
    // BERT pooler + classifier, XLM-RoBERTa's classifier.dense +
    // out_proj): on the first row, tanh(classifier x + bias) when the
    // dense layer is there, then classifier_out [labels, dim] + its bias.
    // classifier_out.data == nullptr: no head.
    kernels::QuantMatrix classifier, classifier_out;
    std::vector<float> classifier_bias, classifier_out_bias;

    // Validates every tensor's presence, shape and type against `config`;
    // MODEL_LOAD error naming the tensor otherwise. Fills config.vocab_size.
    // The prepared copies are written by `threads` threads (the engine's
    // num_threads; 0: ThreadPool::default_thread_count()).
    static ModelWeights from_source(const ModelSource& file, ModelConfig& config, int threads = 0);
};

}  // namespace vllm
