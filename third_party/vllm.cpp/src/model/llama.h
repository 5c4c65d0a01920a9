// The Llama-family decoder forward (Llama, SmolLM2, Mistral; Qwen2's qkv
// bias, Qwen3's q/k norm and Gemma's GeGLU, embedding scale, sandwich norms,
// soft-capping and sliding-window layers as flags). One call runs a batch that mixes
// sequences in prefill and in decode: matmuls see all tokens at once,
// attention reads each sequence's K/V through its block table.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/kv_cache.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// One sequence's slice of a forward batch.
struct SequenceSlice {
    const int32_t* tokens = nullptr;     // the new tokens to run
    int n_tokens = 0;
    int start_pos = 0;                   // position of tokens[0]; K/V of [0, start_pos) is cached
    // Per KV cache group (KVCache::group_of), the block table covering
    // positions [0, start_pos + n_tokens); a sliding-window group's entries
    // before the window are kNullBlock.
    std::array<const int32_t*, kMaxKvCacheGroups> block_tables{};
    // Logits of the slice's last num_logits tokens (0: none; 1: the next
    // token's; k + 1: a speculative step verifying k draft tokens).
    int num_logits = 0;
};

class LlamaModel {
public:
    // max_model_len: the longest sequence the engine will run (the model's
    // context length when <= 0); it picks LongRoPE's factor set
    // (ModelConfig::long_rope_factors).
    LlamaModel(ModelConfig config, ModelWeights weights, int max_model_len);

    const ModelConfig& config() const { return config_; }

    // Runs the batch, writing the new K/V into `cache`. `logits` receives
    // num_logits rows of logit_count() floats per slice, in batch and token order.
    // Not reentrant (scratch buffers are members): the engine step owns it.
    void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                 std::vector<float>& logits);

    // Logits of token ids [0, logit_count()) only: vocab_size unless
    // limited. A draft model proposing only the first `tokens` ids (a
    // reduced drafting vocabulary) reads that many rows of the output
    // matrix per forward instead of all of them; rounded up to whole
    // interleaved row groups, at most vocab_size.
    void limit_logits(int64_t tokens);
    int64_t logit_count() const { return weights_.output.rows; }

private:
    // RoPE angles for one base and scale: the frequency of each rotated
    // pair, and per forward the cos/sin of every batch token's angles.
    struct RopeAngles {
        std::vector<float> inv_freq;
        float magnitude = 1.0f;       // cos and sin are scaled by it (attn_factor, YaRN)
        std::vector<float> cos, sin;  // [tokens][rope_dim / 2]
    };

    void attention(const std::vector<SequenceSlice>& batch, int layer, KVCache& cache, ThreadPool& pool);
    // Refuses a batch in which some layer would read a kNullBlock entry
    // (an internal error: the KV cache manager frees only what no query reads).
    void check_block_tables(const std::vector<SequenceSlice>& batch, const KVCache& cache) const;
    // Everything between the q/k/v matmuls and attention, per head vector
    // in one pass: the qkv bias, then for q and k the q/k norm and RoPE.
    void finish_heads(const LayerWeights& w, const RopeAngles& angles, ThreadPool& pool);
    void fill_angles(RopeAngles& angles);

    // Keys per split of a long attention tile (a multiple of the attention
    // kernel's key chunk); see attention().
    static constexpr int kKeysPerSplit = 512;

    ModelConfig config_;
    ModelWeights weights_;
    RopeAngles rope_;          // every layer's, or the global layers' (Gemma 3)
    RopeAngles rope_sliding_;  // Gemma 3's sliding layers; unused unless config.rope_theta_sliding

    // Per-forward scratch, sized to the batch.
    std::vector<int32_t> positions_;
    std::vector<float> x_, xn_, q_, k_, v_, attn_, gate_, up_;
};

}  // namespace vllm
