#include "model/decoder.h"

#include "kernels/cpu/interleave.h"
#include "kernels/cpu/kernels.h"
#include "model/blocks/activations.h"
#include "model/blocks/attention_heads.h"
#include "model/blocks/bidirectional_attention.h"
#include "model/blocks/embedding.h"
#include "model/blocks/gated_mlp.h"
#include "model/blocks/latent_attention.h"
#include "model/blocks/lora.h"
#include "model/blocks/norms.h"
#include "model/blocks/paged_attention.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace vllm {

Decoder::Decoder(ModelConfig config, ModelWeights weights, int max_model_len)
    : config_(std::move(config)), weights_(std::move(weights)) {
    if (config_.embedding_scale > 0.0f) embedding_multiplier_ = config_.embedding_scale;
    rope_ = RotaryAngles::global(config_, weights_, max_model_len);
    if (config_.traits.rope_theta_sliding > 0.0f) rope_sliding_ = RotaryAngles::sliding(config_);
    if (config_.has_recurrent_layers()) recurrent_ = std::make_unique<RecurrentStates>(config_);
}

void Decoder::begin_forward(const std::vector<SequenceSlice>& batch, const KVCache& cache) {
    const ModelConfig& c = config_;
    check_block_tables(c, batch, cache);
    tokens_.clear();
    positions_.clear();
    for (const SequenceSlice& s : batch)
        for (int i = 0; i < s.n_tokens; ++i) {
            tokens_.push_back(s.tokens[i]);
            positions_.push_back(s.start_pos + i);
        }
    mask_positions_ = positions_;
    int64_t first_row = 0;
    for (const SequenceSlice& s : batch) {
        for (int k = 0; k < s.n_embedding_rows; ++k)
            if (s.embedding_rows[k].attend_until >= 0)
                for (int i = 0; i < s.embedding_rows[k].count; ++i)
                    mask_positions_[first_row + s.embedding_rows[k].first + i] = s.embedding_rows[k].attend_until;
        first_row += s.n_tokens;
    }
    const int64_t T = static_cast<int64_t>(tokens_.size());
    const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
    x_.resize(T * c.dim);
    xn_.resize(T * c.dim);
    q_.resize(T * q_dim);
    k_.resize(T * kv_dim);
    v_.resize(T * kv_dim);
    attn_.resize(T * q_dim);
    if (c.attn_output_gate) {
        q_gated_.resize(T * 2 * q_dim);
        attn_gate_.resize(T * q_dim);
    }
    if (c.n_experts == 0 || c.n_dense_leading > 0) {  // the MoE block keeps its own buffers
        gate_.resize(T * c.ffn_dim);
        up_.resize(T * c.ffn_dim);
    }
    if (rope_.pair_axis.empty()) {
        rope_.fill(positions_);
    } else {
        rope_positions_.clear();
        for (const SequenceSlice& s : batch)
            for (int i = 0; i < s.n_tokens; ++i)
                for (int axis = 0; axis < 3; ++axis)
                    rope_positions_.push_back(s.rope_positions != nullptr ? s.rope_positions[3 * i + axis] : s.start_pos + i);
        rope_.fill_multimodal(rope_positions_);
    }
    if (c.traits.rope_theta_sliding > 0.0f) rope_sliding_.fill(positions_);
}

void Decoder::forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                      std::vector<float>& logits) {
    begin_forward(batch, cache);
    lora_batch_ = &batch;  // mlp(l) has no batch argument (architectures call it)
    embed_tokens(weights_.token_embedding, tokens_, config_.dim, x_.data(), embedding_multiplier_);
    overwrite_embedding_rows(batch, config_.dim, x_.data());
    norm(weights_.layers[0].attn_norm, pool);
    for (int l = 0; l < config_.n_layers; ++l) layer(batch, l, cache, pool);
    output_hidden_rows(config_, weights_, batch, x_.data());
    output_logits(config_, weights_, batch, x_.data(), pool, logits);
}

void Decoder::self_attention(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) {
    const ModelConfig& c = config_;
    const LayerWeights& w = weights_.layers[l];
    if (c.is_mla()) {
        latent_attention_layer(c, w, batch, l, positions_, rope_, xn_.data(), cache, latent_, pool);
        return;
    }
    const int64_t T = static_cast<int64_t>(positions_.size());
    kernels::matmul_shared({{&w.wq, c.attn_output_gate ? q_gated_.data() : q_.data()}, {&w.wk, k_.data()},
                            {&w.wv, v_.data()}},
                           xn_.data(), T, pool);
    add_lora(batch, l, LoraTarget::Q, xn_.data(), c.attn_output_gate ? q_gated_.data() : q_.data(), pool);
    add_lora(batch, l, LoraTarget::K, xn_.data(), k_.data(), pool);
    add_lora(batch, l, LoraTarget::V, xn_.data(), v_.data(), pool);
    const int hd = c.head_dim;
    if (c.attn_output_gate)  // each head's rows: head_dim of q, then head_dim of gate
        for (int64_t i = 0; i < T * c.n_heads; ++i) {
            std::copy_n(q_gated_.data() + 2 * i * hd, hd, q_.data() + i * hd);
            std::copy_n(q_gated_.data() + (2 * i + 1) * hd, hd, attn_gate_.data() + i * hd);
        }
    const bool sliding_rope = c.traits.rope_theta_sliding > 0.0f && c.is_sliding(l);
    finish_attention_heads(c, w, sliding_rope ? rope_sliding_ : rope_, c.rotates(l), T, q_.data(), k_.data(),
                           v_.data(), pool);
    if (c.traits.encoder)  // an encoder of decoder layers (EmbeddingGemma): no mask, no KV cache
        bidirectional_attention(c, batch, l, q_.data(), k_.data(), v_.data(), attn_.data(), pool);
    else
        paged_attention(c, batch, l, mask_positions_, q_.data(), k_.data(), v_.data(), attn_.data(), cache, pool,
                        w.attn_sinks.empty() ? nullptr : w.attn_sinks.data());
    if (c.attn_output_gate)
        for (int64_t i = 0; i < T * c.n_heads * hd; ++i) attn_[i] *= sigmoid(attn_gate_[i]);
    kernels::matmul(w.wo, attn_.data(), T, xn_.data(), pool);
    add_lora(batch, l, LoraTarget::O, attn_.data(), xn_.data(), pool);
    if (!w.bo.empty())
        for (int64_t t = 0; t < T; ++t) kernels::axpy_f32(1.0f, w.bo.data(), xn_.data() + t * c.dim, c.dim);
}

void Decoder::linear_attention(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) {
    gated_delta_net(config_, weights_.layers[l], l, batch, cache.group_of(l), xn_.data(), *recurrent_, linear_, pool);
}

void Decoder::mlp(int l, ThreadPool& pool) {
    const LoraSite lora{lora_batch_, l};
    const int64_t T = static_cast<int64_t>(positions_.size());
    const LayerWeights& w = weights_.layers[l];
    if (config_.is_moe_layer(l))
        moe_mlp(config_, w, xn_.data(), T, xn_.data(), moe_, pool, &lora);
    else
        gated_mlp(w.w_gate, w.w_up, w.w_down, config_.traits.ffn_activation, xn_.data(), T, gate_.data(), up_.data(),
                  xn_.data(), pool, &lora);
}

void Decoder::norm(const std::vector<float>& weight, ThreadPool& pool) {
    if (weight.empty()) {  // no pre-norm (OLMo 2)
        std::copy(x_.begin(), x_.end(), xn_.begin());
        return;
    }
    rms_norm_rows(x_.data(), weight.data(), xn_.data(), static_cast<int64_t>(positions_.size()), config_.dim,
                  config_.rms_eps, pool);
}

void Decoder::add_norm(const std::vector<float>& weight, ThreadPool& pool) {
    if (weight.empty()) {  // no pre-norm (OLMo 2)
        add_in_place(x_.data(), xn_.data(), static_cast<int64_t>(x_.size()), pool);
        norm(weight, pool);
        return;
    }
    add_rms_norm_rows(x_.data(), xn_.data(), weight.data(), xn_.data(), static_cast<int64_t>(positions_.size()),
                      config_.dim, config_.rms_eps, pool);
}

void Decoder::norm_output(const std::vector<float>& weight, ThreadPool& pool) {
    rms_norm_rows(xn_.data(), weight.data(), xn_.data(), static_cast<int64_t>(positions_.size()), config_.dim,
                  config_.rms_eps, pool);
}

void Decoder::scale_sublayer_output(float factor) {
    for (float& v : xn_) v *= factor;
}

void Decoder::end_layer(int l, ThreadPool& pool) {
    if (l + 1 < config_.n_layers)
        add_norm(weights_.layers[l + 1].attn_norm, pool);
    else
        add_in_place(x_.data(), xn_.data(), static_cast<int64_t>(x_.size()), pool);
}

void Decoder::limit_logits(int64_t tokens) {
    if (tokens <= 0) throw_invalid_argument("limit_logits: the number of tokens must be positive");
    const int64_t group = kernels::kInterleaveRows;
    weights_.output.rows = std::min<int64_t>(config_.vocab_size, (tokens + group - 1) / group * group);
}

}  // namespace vllm
