// The state and steps that every decoder-only transformer family shares:
// its config, weights and rotary angles, the per-forward scratch sized to
// the batch, the forward's frame (embed, the layers, the output head) and
// the sublayers built from the blocks (blocks/). An architecture
// (architectures/) subclasses it and writes its layer as the order of
// those steps: where its norms sit and what it adds between them. The
// layer is one virtual call per layer and forward, never per token.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/blocks/latent_attention.h"
#include "model/blocks/gated_delta_net.h"
#include "model/blocks/moe.h"
#include "model/blocks/rotary.h"
#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace vllm {

class Decoder : public DecoderModel {
public:
    // max_model_len: the longest sequence the engine will run (the model's
    // context length when <= 0); it picks LongRoPE's factor set.
    Decoder(ModelConfig config, ModelWeights weights, int max_model_len);

    const ModelConfig& config() const override { return config_; }
    // The frame: the batch gathered, its tokens embedded, the first layer's
    // attention norm, layer() for each layer, the output head.
    void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                 std::vector<float>& logits) final;
    void limit_logits(int64_t tokens) override;
    int64_t logit_count() const override { return weights_.output.rows; }
    const ModelWeights* weights() const override { return &weights_; }

protected:
    // One transformer layer: from xn_ = its attention norm of x_ to end_layer().
    virtual void layer(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool) = 0;

    // xn_ -> xn_: layer l's q/k/v projections, their heads finished (bias,
    // q/k norm, RoPE of the layer's kind), paged attention (with the
    // layer's sinks, if any) and the output projection (plus its bias, if any);
    // for a latent attention model (config.is_mla()), blocks/latent_attention.h.
    // With config.attn_output_gate (Qwen3.5), the q projection's per-head
    // gate rows multiply the attention output by their sigmoid before the
    // output projection.
    void self_attention(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool);
    // xn_ -> xn_: layer l's Gated DeltaNet (blocks/gated_delta_net.h), for
    // config.is_recurrent(l), on each sequence's state in the recurrent
    // KV cache group's slot.
    void linear_attention(const std::vector<SequenceSlice>& batch, int l, KVCache& cache, ThreadPool& pool);
    // xn_ -> xn_: layer l's gated MLP with the config's activation, or its
    // mixture of experts (blocks/moe.h) when config.is_moe_layer(l).
    void mlp(int l, ThreadPool& pool);
    // x_ += xn_ then xn_ = rms_norm(x_) * weight (the residual add fused
    // with the norm after it); xn_ = rms_norm(xn_) * weight (a sublayer's
    // output normalised before its residual add: Gemma 2/3). An empty
    // weight in add_norm (and the frame's first norm) is a layer without
    // that pre-norm (OLMo 2): xn_ = x_.
    void add_norm(const std::vector<float>& weight, ThreadPool& pool);
    void norm_output(const std::vector<float>& weight, ThreadPool& pool);
    // xn_ *= factor: a sublayer's output scaled before its residual add
    // (Granite's residual_scale).
    void scale_sublayer_output(float factor);
    // After layer l's last sublayer: x_ += xn_, then (but after the last
    // layer) xn_ = the next layer's attention norm of x_.
    void end_layer(int l, ThreadPool& pool);

    ModelConfig config_;
    ModelWeights weights_;
    // The token embedding is multiplied by this (Gemma: embedding_scale(dim);
    // Granite: config.embedding_scale).
    float embedding_multiplier_ = 1.0f;

    RotaryAngles rope_;          // every layer's, or the global layers' (Gemma 3/4)
    RotaryAngles rope_sliding_;  // Gemma 3/4's sliding layers; unused unless config.traits.rope_theta_sliding
    std::vector<int32_t> rope_positions_;  // multimodal RoPE (rope_.pair_axis): 3 per token

    // Per-forward scratch, sized to the batch: the batch's tokens and
    // positions, the residual stream x_, the normed/sublayer rows xn_, and
    // the sublayers' own buffers (q_, k_, v_, attn_ for the widest layer).
    std::vector<int32_t> tokens_, positions_;
    // The last key position each token attends to: positions_, except
    // bidirectional image tokens (EmbeddingRows::attend_until).
    std::vector<int32_t> mask_positions_;
    std::vector<float> x_, xn_, q_, k_, v_, attn_, gate_, up_;

private:
    // Checks the block tables, gathers the batch's tokens and positions,
    // sizes the scratch and fills the rotary angles.
    void begin_forward(const std::vector<SequenceSlice>& batch, const KVCache& cache);
    // xn_ = rms_norm(x_) * weight.
    void norm(const std::vector<float>& weight, ThreadPool& pool);

    MoeScratch moe_;
    const std::vector<SequenceSlice>* lora_batch_ = nullptr;  // this forward's batch, for mlp()'s LoRA hook
    LatentScratch latent_;
    // attn_output_gate: the q projection's rows (q and gate per head), the gates.
    std::vector<float> q_gated_, attn_gate_;
    // Linear-attention layers: every request's states and the layer's scratch.
    std::unique_ptr<RecurrentStates> recurrent_;
    GatedDeltaNetScratch linear_;
};

}  // namespace vllm
