// Gemma 4's text decoder (the E2B/E4B models and the dense 31B; its vision
// and audio towers are not part of it): Gemma 3's scaled embedding, GeGLU
// and sandwich norms, plus
//  - per-kind attention shapes: sliding layers have their own head size,
//    KV heads and RoPE (base rope.freq_base_swa over all their dims), full
//    layers "proportional" RoPE (a quarter of the pairs rotate, frequencies
//    over the whole head: rope_freqs divides the rest to nothing);
//  - q/k norms, a weightless norm on each value head, attention scale 1;
//  - KV sharing: the last config.kv_shared_layers layers project queries
//    only and attend over the cache of the last earlier layer of their kind
//    (ModelConfig::kv_source_of), storing nothing; a K=V full layer
//    (attention_k_eq_v, the 31B) takes its values from the k projection;
//  - per-layer token embeddings (E2B/E4B): each token's row of a
//    [vocab, layers * P] table, scaled by sqrt(P), added to a projection of
//    the scaled token embedding (times dim^-1/2, RMS-normed per layer) and
//    halved in power (times 2^-1/2); after its MLP every layer adds
//    proj(gelu(gate(x)) * its part) normed, to the residual stream;
//  - a scalar per layer that multiplies the layer's output (layer_output_scale);
//  - the FFN width per layer (the E models' double-wide MLP on sharing layers);
//  - the final logit soft-cap (config.final_softcap, the output block).
// The arithmetic follows transformers' Gemma4ForCausalLM and llama.cpp's
// src/models/gemma4.cpp. Its mixture-of-experts layers (26B-A4B) are refused
// by name at load (their router and extra norms are not implemented).
#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/attention_heads.h"
#include "model/blocks/embedding.h"
#include "model/blocks/gated_mlp.h"
#include "model/blocks/norms.h"
#include "model/blocks/paged_attention.h"
#include "model/decoder.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

class Gemma4Decoder final : public Decoder {
public:
    Gemma4Decoder(ModelConfig config, ModelWeights weights, int max_model_len)
        : Decoder(std::move(config), std::move(weights), max_model_len) {
        embedding_multiplier_ = embedding_scale(config_.dim);
        // Each layer's attention shapes as a config of their own, which the
        // attention blocks read.
        for (int l = 0; l < config_.n_layers; ++l) {
            ModelConfig c = config_;
            c.head_dim = config_.head_dim_of(l);
            c.n_kv_heads = config_.kv_heads_of(l);
            c.rope_dim = config_.rope_dim_of(l);
            layer_attention_.push_back(std::move(c));
        }
    }

protected:
    void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) override {
        const LayerWeights& w = weights_.layers[l];
        const int64_t T = static_cast<int64_t>(positions_.size());
        if (l == 0 && config_.per_layer_embd_dim > 0) per_layer_inputs(pool);  // x_: the scaled embedding
        attention(batch, l, cache, pool);
        norm_output(w.post_attn_norm, pool);
        add_norm(w.ffn_norm, pool);
        mlp(l, pool);
        norm_output(w.post_ffn_norm, pool);
        if (config_.per_layer_embd_dim > 0) {
            add_in_place(x_.data(), xn_.data(), T * config_.dim, pool);
            per_layer_embedding(l, pool);
        }
        if (!w.output_scale.empty()) {  // (x + xn) * s, as x * s + xn * s
            const float s = w.output_scale[0];
            for (int64_t i = 0; i < T * config_.dim; ++i) x_[i] *= s, xn_[i] *= s;
        }
        end_layer(l, pool);
    }

private:
    // xn_ -> xn_: layer l's attention (see the file comment).
    void attention(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) {
        const ModelConfig& c = layer_attention_[l];
        const LayerWeights& w = weights_.layers[l];
        const int64_t T = static_cast<int64_t>(positions_.size());
        const int source = config_.kv_source_of(l);
        const bool own_kv = source == l;
        if (!own_kv) {
            kernels::matmul(w.wq, xn_.data(), T, q_.data(), pool);
        } else if (w.values_are_keys) {
            kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}}, xn_.data(), T, pool);
            std::copy(k_.begin(), k_.begin() + T * c.n_kv_heads * c.head_dim, v_.begin());
        } else {
            kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, xn_.data(), T, pool);
        }
        float* k = own_kv ? k_.data() : nullptr;
        float* v = own_kv ? v_.data() : nullptr;
        const RotaryAngles& angles = c.is_sliding(l) ? rope_sliding_ : rope_;
        finish_attention_heads(c, w, angles, /*rotary=*/true, T, q_.data(), k, v, pool);
        paged_attention(c, batch, source, positions_, q_.data(), k, v, attn_.data(), cache, pool);
        kernels::matmul(w.wo, attn_.data(), T, xn_.data(), pool);
    }

    // ple_ [layer][token][P]: the per-layer inputs of the batch's tokens,
    // from x_ holding their scaled embeddings.
    void per_layer_inputs(ThreadPool& pool) {
        const int64_t T = static_cast<int64_t>(tokens_.size()), P = config_.per_layer_embd_dim,
                      L = config_.n_layers, width = L * P;
        std::vector<float> token_rows(T * width), projected(T * width);
        embed_tokens(weights_.per_layer_token_embd, tokens_, static_cast<int>(width), token_rows.data(),
                     std::sqrt(static_cast<float>(P)));
        kernels::matmul(weights_.per_layer_model_proj, x_.data(), T, projected.data(), pool);
        const float projection_scale = 1.0f / std::sqrt(static_cast<float>(config_.dim));
        for (float& f : projected) f *= projection_scale;
        rms_norm_rows(projected.data(), weights_.per_layer_proj_norm.data(), projected.data(), T * L, P,
                      config_.rms_eps, pool);
        const float input_scale = 1.0f / std::sqrt(2.0f);
        ple_.resize(T * width);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t l = 0; l < L; ++l)
                for (int64_t i = 0; i < P; ++i) {
                    const int64_t from = t * width + l * P + i;
                    ple_[(l * T + t) * P + i] = (projected[from] + token_rows[from]) * input_scale;
                }
    }

    // x_ holds the layer's residual stream after its MLP: xn_ = the norm of
    // proj(gelu(gate(x_)) * layer l's per-layer input).
    void per_layer_embedding(int l, ThreadPool& pool) {
        const LayerWeights& w = weights_.layers[l];
        const int64_t T = static_cast<int64_t>(positions_.size()), P = config_.per_layer_embd_dim;
        ple_gate_.resize(T * P);
        kernels::matmul(w.per_layer_gate, x_.data(), T, ple_gate_.data(), pool);
        gated_activation(FfnActivation::GELU_TANH, ple_gate_.data(), ple_.data() + l * T * P, T * P, pool);
        kernels::matmul(w.per_layer_proj, ple_gate_.data(), T, xn_.data(), pool);
        norm_output(w.per_layer_post_norm, pool);
    }

    std::vector<ModelConfig> layer_attention_;
    std::vector<float> ple_, ple_gate_;
};

std::unique_ptr<DecoderModel> build_gemma4_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    return std::make_unique<Gemma4Decoder>(std::move(config), std::move(weights), max_model_len);
}

constexpr ArchitectureTraits kGemma4Traits = [] {
    ArchitectureTraits t;
    t.rope_style = RopeStyle::HALVES;
    t.qk_norm = true;
    t.ffn_activation = FfnActivation::GELU_TANH;
    t.post_norms = true;
    t.sliding_window = true;
    t.rope_theta_sliding = 10000.0f;  // rope.freq_base_swa overrides
    t.attn_scale = 1.0f;
    t.experts_refused = "Gemma 4's mixture-of-experts layers (gemma4.expert_count: the 26B-A4B model) are not "
                        "supported (their router, per-expert scales and extra norms are not implemented)";
    t.gemma4_layers = true;
    return t;
}();

}  // namespace

extern const Architecture kGemma4Architecture = {"gemma4", kGemma4Traits, build_gemma4_decoder};

}  // namespace vllm
