// Hyperparameters of a decoder, read from GGUF metadata (`<arch>.*` keys)
// with what the architecture's registry entry fixes (model_registry.h).
// The flags below are what the shared blocks (blocks/) vary by.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kv_cache/kv_layer_shape.h"
#include "model/architecture_traits.h"

namespace vllm {

class ModelSource;

struct ModelConfig {
    std::string architecture;
    // What the architecture fixes (architecture_traits.h), with the fields a
    // source may override as this file resolved them. Read it here; a new
    // trait is written there alone.
    ArchitectureTraits traits;
    int n_layers = 0;
    int dim = 0;            // embedding length
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int ffn_dim = 0;
    int vocab_size = 0;
    int context_length = 0;
    int rope_dim = 0;       // leading dims of each head that RoPE rotates
    float rope_theta = 10000.0f;
    // Linear RoPE scaling ("rope.scaling.type" = "linear"): every angle is
    // multiplied by 1 / rope.scaling.factor. 1 when the model has none.
    float rope_freq_scale = 1.0f;
    // YaRN ("rope.scaling.type" = "yarn", with rope_freq_scale = 1 / factor):
    // pair i's frequency is the interpolated one (times rope_freq_scale) or
    // the original, blended by a ramp over the pairs between those making
    // yarn_beta_fast and yarn_beta_slow rotations in the original context
    // (fast pairs keep theirs), times yarn_ext_factor; cos and sin are
    // multiplied by rope_magnitude (YaRN's mscale). 0: no YaRN.
    int yarn_original_context = 0;
    float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f, yarn_ext_factor = 1.0f;
    // Whether the ramp's ends are rounded out to whole pairs (floor, ceil):
    // llama.cpp always does; transformers unless rope_scaling says
    // `truncate: false` (gpt-oss's published config), which a Hugging Face
    // source passes on as the metadata key vllm.yarn_truncate.
    bool yarn_truncate = true;
    // cos and sin are multiplied by this: rope.scaling.attn_factor (llama.cpp
    // applies it to every model; LongRoPE's attention factor), times YaRN's
    // mscale. 1 when the model has neither.
    float rope_magnitude = 1.0f;
    // LongRoPE (Phi-3 "longrope"/"su"): per-pair frequency divisors in two
    // sets, rope_factors_short/long (ModelWeights), trained for contexts up
    // to and past this original context (rope.scaling.original_context_length,
    // default context_length). 0: no LongRoPE. Which set a model runs with is
    // chosen once, by the engine's max_model_len: long_rope_factors().
    int longrope_original_context = 0;
    float rms_eps = 1e-5f;
    // Scores are q.k * attn_scale: `<arch>.attention.scale` when the source
    // has it (the Hugging Face loader writes Gemma's query_pre_attn_scalar^-0.5
    // there), else llama.cpp's rule: 1/sqrt(dim / n_heads) for the Gemma 2/3
    // 27B models (recognised by their block count, as llama.cpp does),
    // 1/sqrt(head_dim) for everything else.
    float attn_scale = 0.0f;
    // Gemma 2 soft-capping: x -> cap * tanh(x / cap) on the attention scores
    // and the final logits. 0 when absent.
    float attn_softcap = 0.0f;
    float final_softcap = 0.0f;

    // Mixture of experts (blocks/moe.h): every layer's MLP is n_experts
    // experts of expert_ffn_dim, of which a router picks n_experts_used per
    // token; 0: dense. Scores: traits.expert_gating; the picked scores are divided
    // by their sum when expert_weights_norm (norm_topk_prob), then multiplied
    // by expert_weights_scale. A shared expert of shared_expert_ffn_dim (0:
    // none) runs on every token, gated by sigmoid(w . x) when the layer has
    // that vector (Qwen2-MoE).
    int n_experts = 0;
    int n_experts_used = 0;
    int expert_ffn_dim = 0;
    int shared_expert_ffn_dim = 0;
    bool expert_weights_norm = false;
    float expert_weights_scale = 1.0f;
    // Group-limited routing: the experts are n_expert_groups equal groups,
    // each scored by the sum of its expert_group_score_top best scores (1:
    // DeepSeek-V2's group_limited_greedy as transformers runs it; 2: what
    // llama.cpp runs for a GGUF's expert_group_count, DeepSeek-V3's rule);
    // only the n_expert_groups_used best groups' experts can be picked.
    // 0: no groups.
    int n_expert_groups = 0;
    int n_expert_groups_used = 0;
    int expert_group_score_top = 0;

    // Granite's multipliers: each sublayer's output is multiplied by
    // residual_scale before its residual add, and the logits are divided by
    // logit_scale. 1: none.
    float residual_scale = 1.0f;
    float logit_scale = 1.0f;
    // The token embedding is multiplied by this (Granite's embedding_scale);
    // 0: the architecture's own rule (Gemma: sqrt(dim); else none).
    float embedding_scale = 0.0f;

    // Sliding-window attention: a query at position p of a sliding layer
    // sees the keys at (p - sliding_window, p]. 0: every layer is global.
    // Which layers slide: traits.sliding_pattern (is_sliding()).
    int sliding_window = 0;

    // Gemma 4 (llama.cpp's keys; every field's default is "as the rest"):
    // which layers slide when the file lists them
    // (attention.sliding_window_pattern, one flag per layer; empty: by
    // traits.sliding_pattern); each layer's KV heads and FFN width where
    // head_count_kv / feed_forward_length are per-layer arrays (n_kv_heads
    // and ffn_dim are then the largest, what the scratch is sized by); the
    // sliding layers' head size and rotated dims (attention.key_length_swa,
    // rope.dimension_count_swa; 0: head_dim, rope_dim); the last
    // kv_shared_layers layers store no K/V and attend over kv_source_of()'s
    // (attention.shared_kv_layers); per-layer token embeddings of
    // per_layer_embd_dim floats per layer (embedding_length_per_layer_input;
    // 0: none); values RMS-normalised per head without a weight (value_norm).
    std::vector<bool> sliding_layers;
    std::vector<int> layer_kv_heads, layer_ffn_dims;
    int head_dim_sliding = 0, rope_dim_sliding = 0;
    int kv_shared_layers = 0;
    int per_layer_embd_dim = 0;
    bool value_norm = false;

    int kv_heads_of(int layer) const { return layer_kv_heads.empty() ? n_kv_heads : layer_kv_heads[layer]; }
    int head_dim_of(int layer) const { return head_dim_sliding > 0 && is_sliding(layer) ? head_dim_sliding : head_dim; }
    int rope_dim_of(int layer) const { return rope_dim_sliding > 0 && is_sliding(layer) ? rope_dim_sliding : rope_dim; }
    int ffn_dim_of(int layer) const { return layer_ffn_dims.empty() ? ffn_dim : layer_ffn_dims[layer]; }
    // The layer whose KV cache `layer` reads: itself, or for a KV-sharing
    // layer the last layer of its kind (sliding or full) before the sharing
    // ones (transformers' kv_sharing_modes "store").
    int kv_source_of(int layer) const;

    // Whether a LongRoPE model serving sequences of up to max_model_len
    // tokens rotates with the long factors: when max_model_len exceeds the
    // original context, as vLLM and llama.cpp choose. The choice is made once
    // for every sequence and position (transformers instead switches by each
    // sequence's current length and recomputes its cache when it crosses the
    // original context), so the KV cache, prefix caching and batch invariance
    // hold; a sequence shorter than the original context then rotates with
    // the long factors too.
    bool long_rope_factors(int max_model_len) const {
        return longrope_original_context > 0 && max_model_len > longrope_original_context;
    }

    // Qwen3.5's hybrid (qwen35, qwen35moe): the layers where
    // recurrent_layers[l] is set are Gated DeltaNet linear attention
    // (blocks/gated_delta_net.h), whose per-request state (a causal conv's
    // last conv_kernel - 1 inputs and a delta-rule matrix per value head)
    // lives in the recurrent KV cache group (kv_cache_group.h); the others
    // are full attention whose q projection also yields an output gate
    // (attn_output_gate: per head head_dim query rows then head_dim gate
    // rows; the attention output is multiplied by sigmoid(gate)). The
    // linear layers: linear_k_heads query/key heads and linear_v_heads
    // value heads of linear_head_dim each (llama.cpp's ssm.group_count,
    // ssm.time_step_rank, ssm.state_size); value head h reads key head
    // h % linear_k_heads (llama.cpp's converter reorders them so) or, with
    // linear_v_heads_grouped (a Hugging Face checkpoint as trained),
    // h / (linear_v_heads / linear_k_heads).
    std::vector<bool> recurrent_layers;  // empty: no linear-attention layer
    bool attn_output_gate = false;
    int conv_kernel = 0;
    int linear_k_heads = 0, linear_v_heads = 0, linear_head_dim = 0;
    bool linear_v_heads_grouped = false;

    bool is_recurrent(int layer) const {
        return layer < static_cast<int>(recurrent_layers.size()) && recurrent_layers[layer];
    }
    bool has_recurrent_layers() const {
        for (bool r : recurrent_layers)
            if (r) return true;
        return false;
    }
    // The linear layers' channels through the conv: q, k (linear_k_heads
    // heads each) and v (linear_v_heads heads).
    int linear_conv_channels() const { return (2 * linear_k_heads + linear_v_heads) * linear_head_dim; }
    // Floats of one request's state in one linear layer: the conv's
    // (conv_kernel - 1) x channels inputs and the delta-rule matrices.
    int64_t recurrent_state_floats() const {
        return int64_t(conv_kernel - 1) * linear_conv_channels() +
               int64_t(linear_v_heads) * linear_head_dim * linear_head_dim;
    }

    // Bytes of one request's state over every linear layer (floats).
    int64_t recurrent_state_bytes() const {
        int64_t layers = 0;
        for (bool r : recurrent_layers) layers += r ? 1 : 0;
        return layers * recurrent_state_floats() * 4;
    }
    bool rotates(int layer) const {
        const int step = traits.no_rope_layer_step;
        return step == 0 || (layer + 1) % step != 0;
    }
    // Multi-head latent attention (DeepSeek-V2, blocks/latent_attention.h):
    // kv_lora_rank > 0. Each token's K/V are one compressed latent of
    // kv_lora_rank floats (after its RMS norm) and one rotary key part of
    // rope_dim floats shared by every head; the KV cache stores that row
    // alone as K, no V (kv_shape(): one "head" of head_dim = kv_lora_rank +
    // rope_dim, n_kv_heads 1).
    // Each head's query is qk_nope_dim + rope_dim floats (through a
    // q_lora_rank bottleneck when q_lora_rank > 0), its value v_head_dim.
    int kv_lora_rank = 0;
    int q_lora_rank = 0;
    int qk_nope_dim = 0;
    int v_head_dim = 0;
    // The first n_dense_leading layers of a mixture-of-experts model have a
    // dense MLP of ffn_dim (DeepSeek's first_k_dense_replace).
    int n_dense_leading = 0;

    bool is_mla() const { return kv_lora_rank > 0; }
    // Whether layer l's MLP is a mixture of experts.
    bool is_moe_layer(int layer) const { return n_experts > 0 && layer >= n_dense_leading; }

    bool is_sliding(int layer) const {
        if (!sliding_layers.empty()) return sliding_window > 0 && sliding_layers[layer];
        const int pattern = traits.sliding_pattern;
        return sliding_window > 0 && (pattern == 0 || (layer + 1) % pattern != 0);
    }

    // What each layer keeps in the KV cache (kv_layer_shape.h), for models
    // whose layers differ; empty: every layer {n_kv_heads, head_dim,
    // head_dim}. Read through kv_shape().
    std::vector<KvLayerShape> layer_kv_shapes;
    KvLayerShape kv_shape(int layer) const {
        return layer_kv_shapes.empty() ? KvLayerShape{n_kv_heads, head_dim, head_dim} : layer_kv_shapes[layer];
    }
    std::vector<KvLayerShape> kv_shapes() const {
        std::vector<KvLayerShape> shapes;
        for (int l = 0; l < n_layers; ++l) shapes.push_back(kv_shape(l));
        return shapes;
    }

    // Multimodal RoPE (traits.multimodal_rope): how many of each head's
    // rope_dim / 2 rotated pairs follow the temporal, height and width
    // position (rope.dimension_sections, llama.cpp's 4th entry 0); all
    // zero without. A text token's three positions are equal, so it is
    // plain RoPE for text; an image's tokens get the grid's positions.
    std::array<int, 3> rope_sections{};

    // MODEL_LOAD error for an architecture this engine does not run, or for
    // missing/inconsistent hyperparameters.
    static ModelConfig from_source(const ModelSource& file);
};

}  // namespace vllm
