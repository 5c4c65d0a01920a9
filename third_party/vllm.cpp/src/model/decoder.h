// The state and steps that every decoder-only transformer family shares:
// its config, weights and rotary angles, the per-forward scratch sized to
// the batch, and the sublayers built from the blocks (blocks/). An
// architecture (architectures/) subclasses it and writes its forward as
// the order of those steps: where its norms sit, how it embeds, what it
// adds between them.
#pragma once
#include <cstdint>
#include <vector>

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
    void limit_logits(int64_t tokens) override;
    int64_t logit_count() const override { return weights_.output.rows; }

protected:
    // Checks the block tables, gathers the batch's tokens and positions,
    // sizes the scratch and fills the rotary angles. Returns the token count.
    int64_t begin_forward(const std::vector<SequenceSlice>& batch, const KVCache& cache);
    // x_ = the batch's token embeddings, times `scale` (embed_tokens).
    void embed(float scale = 1.0f);
    // xn_ -> xn_: layer l's q/k/v projections, their heads finished (bias,
    // q/k norm, RoPE of the layer's kind), paged attention and the output
    // projection.
    void self_attention(const std::vector<SequenceSlice>& batch, int layer, KVCache& cache, ThreadPool& pool);
    // xn_ -> xn_: layer l's gated MLP with the config's activation.
    void mlp(int layer, ThreadPool& pool);
    // xn_ = rms_norm(x_) * weight; x_ += xn_ then xn_ = rms_norm(x_) * weight
    // (the residual add fused with the norm after it); xn_ = rms_norm(xn_) * weight.
    void norm(const std::vector<float>& weight, ThreadPool& pool);
    void add_norm(const std::vector<float>& weight, ThreadPool& pool);
    void norm_output(const std::vector<float>& weight, ThreadPool& pool);
    // After layer l's last sublayer: x_ += xn_, then (but after the last
    // layer) xn_ = the next layer's attention norm of x_.
    void end_layer(int layer, ThreadPool& pool);
    // The wanted rows' logits from x_ (embedding.h's output_logits).
    void output(const std::vector<SequenceSlice>& batch, ThreadPool& pool, std::vector<float>& logits);

    ModelConfig config_;
    ModelWeights weights_;

private:
    RotaryAngles rope_;          // every layer's, or the global layers' (Gemma 3)
    RotaryAngles rope_sliding_;  // Gemma 3's sliding layers; unused unless config.rope_theta_sliding

    // Per-forward scratch, sized to the batch: the residual stream x_, the
    // normed/sublayer rows xn_, and the sublayers' own buffers.
    std::vector<int32_t> tokens_, positions_;
    std::vector<float> x_, xn_, q_, k_, v_, attn_, gate_, up_;
};

}  // namespace vllm
