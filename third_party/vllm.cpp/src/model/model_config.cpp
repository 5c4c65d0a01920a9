#include "model/model_config.h"

#include "formats/model_source.h"
#include "kernels/cpu/ops.h"
#include "model/model_registry.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace vllm {

namespace {

float positive_or_zero(const ModelSource& file, const std::string& key) {
    const double v = file.get_float(key, 0.0);
    if (!(v >= 0.0)) throw_model_load("cannot load '" + file.path() + "': " + key + " must not be negative");
    return static_cast<float>(v);
}

// YaRN's keys as llama.cpp's converter writes them (defaults: llama.cpp's).
void read_yarn(const ModelSource& file, const std::string& a, double factor, ModelConfig& c) {
    const std::string k = a + "rope.scaling.";
    const int64_t original = file.get_int(k + "original_context_length", 0);
    if (original <= 0)
        throw_model_load("cannot load '" + file.path() + "': YaRN needs a positive " + k + "original_context_length");
    c.yarn_original_context = static_cast<int>(original);
    c.yarn_beta_fast = static_cast<float>(file.get_float(k + "yarn_beta_fast", 32.0));
    c.yarn_beta_slow = static_cast<float>(file.get_float(k + "yarn_beta_slow", 1.0));
    c.yarn_ext_factor = static_cast<float>(file.get_float(k + "yarn_ext_factor", 1.0));
    c.yarn_truncate = file.get_bool("vllm.yarn_truncate", true);
    if (!(c.yarn_beta_fast > 0.0f && c.yarn_beta_slow > 0.0f && c.yarn_ext_factor >= 0.0f && c.yarn_ext_factor <= 1.0f))
        throw_model_load("cannot load '" + file.path() + "': " + k +
                         "yarn_beta_fast/yarn_beta_slow must be positive, yarn_ext_factor in [0, 1]");
    // llama.cpp's mscale: attn_factor * (1 + 0.1 ln(factor)) where any
    // extrapolated frequency is kept (transformers' default attention factor).
    if (c.yarn_ext_factor > 0.0f) c.rope_magnitude *= static_cast<float>(1.0 + 0.1 * std::log(factor));
}

// LongRoPE is what llama.cpp's converter writes for Phi-3's "longrope"/"su"
// scaling: no scaling type (or "longrope"), the factor tensors, the original
// context and the attention factor (already in rope_magnitude).
void read_longrope(const ModelSource& file, const std::string& a, const std::string& scaling, ModelConfig& c) {
    const bool factors = file.find_tensor("rope_factors_long.weight") != nullptr ||
                         file.find_tensor("rope_factors_short.weight") != nullptr;
    if (!factors) {
        if (scaling == "longrope")
            throw_model_load("cannot load '" + file.path() + "': " + a +
                             "rope.scaling.type 'longrope' needs the tensors rope_factors_long.weight and "
                             "rope_factors_short.weight");
        return;
    }
    if (scaling != "none" && scaling != "longrope")
        throw_model_load("cannot load '" + file.path() + "': LongRoPE factor tensors with " + a +
                         "rope.scaling.type '" + scaling + "'");
    const int64_t original = file.get_int(a + "rope.scaling.original_context_length", c.context_length);
    if (original <= 0)
        throw_model_load("cannot load '" + file.path() + "': " + a + "rope.scaling.original_context_length must be positive");
    c.longrope_original_context = static_cast<int>(original);
}

// Mixture-of-experts keys as llama.cpp's converter writes them; what the
// forward does not implement is refused by name.
void read_experts(const ModelSource& file, const std::string& a, ModelConfig& c) {
    const ArchitectureTraits& traits = c.traits;
    const auto fail = [&](const std::string& why) { throw_model_load("cannot load '" + file.path() + "': " + why); };
    const int64_t experts = file.get_int(a + "expert_count", 0);
    const int64_t used = file.get_int(a + "expert_used_count", 0);
    if (experts <= 1) {  // llama.cpp reads 0 and 1 as a dense model
        if (used > 1) fail(a + "expert_used_count is " + std::to_string(used) + " without an " + a + "expert_count");
        return;
    }
    if (used <= 0 || used > experts)
        fail(a + "expert_used_count " + std::to_string(used) + " is not between 1 and " + a + "expert_count " +
             std::to_string(experts));
    c.n_experts = static_cast<int>(experts);
    c.n_experts_used = static_cast<int>(used);
    const int64_t fallback = traits.expert_ffn_divided_by_used ? c.ffn_dim / used : c.ffn_dim;
    c.expert_ffn_dim = static_cast<int>(file.get_int(a + "expert_feed_forward_length", fallback));
    c.shared_expert_ffn_dim = static_cast<int>(file.get_int(a + "expert_shared_feed_forward_length", 0));
    if (c.expert_ffn_dim <= 0 || c.shared_expert_ffn_dim < 0)
        fail(a + "expert_feed_forward_length must be positive");
    c.expert_weights_norm = file.get_bool(a + "expert_weights_norm", traits.expert_weights_norm);
    const double scale = file.get_float(a + "expert_weights_scale", 0.0);
    if (!(scale >= 0.0)) fail(a + "expert_weights_scale must not be negative");
    c.expert_weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);  // llama.cpp: 0 means none
    // llama.cpp's numbering: 0 (absent) is the architecture's own, 3 its
    // SOFTMAX_WEIGHT (softmax over the picked logits).
    const int64_t gating = file.get_int(a + "expert_gating_func", 0);
    if (gating == 1)
        c.traits.expert_gating = ExpertGating::SOFTMAX;
    else if (gating == 2)
        c.traits.expert_gating = ExpertGating::SIGMOID;
    else if (gating == 3)
        c.traits.expert_gating = ExpertGating::SOFTMAX_OF_PICKED;
    else if (gating != 0)
        fail(a + "expert_gating_func " + std::to_string(gating) +
             " is not supported (supported: 1 softmax, 2 sigmoid, 3 softmax of the picked)");
    // Group-limited routing: a GGUF's groups as llama.cpp runs them (a group
    // scored by its best two experts); a Hugging Face DeepSeek-V2's
    // group_limited_greedy (by its best one), which its loader marks with
    // vllm.expert_group_score "max".
    const int64_t groups = file.get_int(a + "expert_group_count", 0);
    if (groups > 1 && !traits.mla)
        fail(a + "expert_group_count " + std::to_string(groups) + " is not supported (group-limited routing is "
             "implemented for deepseek2 only)");
    if (groups > 1) {
        const int64_t groups_used = file.get_int(a + "expert_group_used_count", 0);
        c.expert_group_score_top = file.get_string("vllm.expert_group_score", "") == "max" ? 1 : 2;
        if (experts % groups != 0 || experts / groups < c.expert_group_score_top || groups_used < 1 ||
            groups_used > groups || groups_used * (experts / groups) < c.n_experts_used)
            fail(a + "expert_group_count " + std::to_string(groups) + " and expert_group_used_count " +
                 std::to_string(groups_used) + " do not split " + std::to_string(experts) + " experts into equal "
                 "groups holding the " + std::to_string(c.n_experts_used) + " used per token");
        c.n_expert_groups = static_cast<int>(groups);
        c.n_expert_groups_used = static_cast<int>(groups_used);
    }
    // deepseek2's shared experts run as one MLP of their summed width
    // (llama.cpp: expert_feed_forward_length * expert_shared_count) where the
    // metadata has no shared length of its own; the other architectures read
    // one shared expert's width from the metadata or its tensor.
    const int64_t shared = file.get_int(a + "expert_shared_count", 0);
    if (shared < 0) fail(a + "expert_shared_count must not be negative");
    if (shared > 1 && !traits.mla)
        fail(a + "expert_shared_count " + std::to_string(shared) + " is not supported (several shared experts are "
             "implemented for deepseek2 only)");
    if (traits.mla && shared > 0 && file.find(a + "expert_shared_feed_forward_length") == nullptr)
        c.shared_expert_ffn_dim = static_cast<int>(c.expert_ffn_dim * shared);
}

// DeepSeek-V2's multi-head latent attention (ModelConfig::kv_lora_rank), as
// llama.cpp's converter writes it: key_length / value_length are the cached
// latent row (kv_lora_rank + rope dim) and the latent (kv_lora_rank),
// key_length_mla / value_length_mla a head's query/key and value widths.
// The softmax scale and YaRN's magnitude follow llama.cpp's deepseek2 (and
// transformers' DeepseekV2 where mscale equals mscale_all_dim, as in every
// published config): cos/sin keep rope.scaling.attn_factor alone, and the
// scale is (attn_factor * (1 + 0.1 * mscale_all_dim * ln factor))^2 /
// sqrt(key_length_mla), mscale_all_dim being yarn_log_multiplier / 0.1.
void read_mla(const ModelSource& file, const std::string& a, double attn_factor, ModelConfig& c) {
    const auto fail = [&](const std::string& why) { throw_model_load("cannot load '" + file.path() + "': " + why); };
    const int64_t kv_lora = file.get_int(a + "attention.kv_lora_rank", 0);
    if (kv_lora <= 0) fail(a + "attention.kv_lora_rank is missing or not positive (multi-head latent attention needs it)");
    c.kv_lora_rank = static_cast<int>(kv_lora);
    c.q_lora_rank = static_cast<int>(file.get_int(a + "attention.q_lora_rank", 0));
    if (c.q_lora_rank < 0) fail(a + "attention.q_lora_rank must not be negative");
    if (c.n_kv_heads != 1)
        fail(a + "attention.head_count_kv is " + std::to_string(c.n_kv_heads) + ", but latent attention caches one "
             "latent row per token (llama.cpp's converter writes 1)");
    if (c.head_dim != c.kv_lora_rank + c.rope_dim)
        fail(a + "attention.key_length " + std::to_string(c.head_dim) + " is not " + a + "attention.kv_lora_rank " +
             std::to_string(c.kv_lora_rank) + " + " + a + "rope.dimension_count " + std::to_string(c.rope_dim) +
             " (the cached latent row)");
    const int64_t value_length = file.get_int(a + "attention.value_length", c.kv_lora_rank);
    if (value_length != c.kv_lora_rank)
        fail(a + "attention.value_length " + std::to_string(value_length) + " is not " + a +
             "attention.kv_lora_rank " + std::to_string(c.kv_lora_rank));
    const int64_t key_mla = file.get_int(a + "attention.key_length_mla", 0);
    c.v_head_dim = static_cast<int>(file.get_int(a + "attention.value_length_mla", 0));
    if (key_mla <= c.rope_dim || c.v_head_dim <= 0)
        fail(a + "attention.key_length_mla / value_length_mla are missing or too small (a head's query/key width "
             "must exceed the rope dimension " + std::to_string(c.rope_dim) + ")");
    c.qk_nope_dim = static_cast<int>(key_mla - c.rope_dim);
    // The cache keeps one latent row per token as K and no V.
    c.layer_kv_shapes.assign(static_cast<size_t>(c.n_layers), KvLayerShape{1, c.head_dim, 0});
    c.n_dense_leading = static_cast<int>(file.get_int(a + "leading_dense_block_count", 0));
    if (c.n_dense_leading < 0 || c.n_dense_leading > c.n_layers)
        fail(a + "leading_dense_block_count " + std::to_string(c.n_dense_leading) + " is not between 0 and the " +
             "block count " + std::to_string(c.n_layers));
    double mscale_all_dim = 0.0;
    if (file.find(a + "rope.scaling.yarn_log_multiplier") != nullptr) {
        mscale_all_dim = file.get_float(a + "rope.scaling.yarn_log_multiplier", 0.0) / 0.1;
        if (!(mscale_all_dim >= 0.0)) fail(a + "rope.scaling.yarn_log_multiplier must not be negative");
    }
    double log_factor = 0.0;
    if (c.yarn_original_context > 0) {
        log_factor = std::log(1.0 / c.rope_freq_scale);
        c.rope_magnitude = static_cast<float>(attn_factor);  // read_yarn's (1 + 0.1 ln factor) cancelled
        if (mscale_all_dim == 0.0) c.rope_magnitude *= static_cast<float>(1.0 + 0.1 * log_factor);
    }
    const double mscale = c.rope_magnitude * (1.0 + 0.1 * mscale_all_dim * log_factor);
    c.attn_scale = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(key_mla)));
}

// A key llama.cpp reads as one value or as one per layer (its
// get_key_or_arr): the largest value, with the per-layer values in
// `per_layer` when the file has an array (else it is left empty).
int one_or_per_layer(const ModelSource& file, const std::string& key, int n_layers, int64_t fallback,
                     std::vector<int>& per_layer) {
    const GgufValue* v = file.find(key);
    if (v == nullptr || v->type != GgufValueType::ARRAY)
        return static_cast<int>(fallback < 0 ? file.require_int(key) : file.get_int(key, fallback));
    const std::vector<int64_t> values = file.get_int_array(key);
    if (static_cast<int>(values.size()) != n_layers)
        throw_model_load("cannot load '" + file.path() + "': " + key + " has " + std::to_string(values.size()) +
                         " values for " + std::to_string(n_layers) + " layers");
    int largest = 0;
    for (int64_t x : values) {
        if (x <= 0 || x > (int64_t(1) << 30)) throw_model_load("cannot load '" + file.path() + "': " + key + " must be positive");
        per_layer.push_back(static_cast<int>(x));
        largest = std::max(largest, static_cast<int>(x));
    }
    return largest;
}

// Gemma 4's keys (ModelConfig's Gemma 4 fields), as llama.cpp's converter
// writes them.
void read_gemma4_layers(const ModelSource& file, const std::string& a, ModelConfig& c) {
    const auto fail = [&](const std::string& why) { throw_model_load("cannot load '" + file.path() + "': " + why); };
    const std::vector<int64_t> pattern = file.get_int_array(a + "attention.sliding_window_pattern");
    if (!pattern.empty() && static_cast<int>(pattern.size()) != c.n_layers)
        fail(a + "attention.sliding_window_pattern has " + std::to_string(pattern.size()) + " flags for " +
             std::to_string(c.n_layers) + " layers");
    for (int64_t flag : pattern) c.sliding_layers.push_back(flag != 0);
    c.head_dim_sliding = static_cast<int>(file.get_int(a + "attention.key_length_swa", c.head_dim));
    if (file.get_int(a + "attention.value_length_swa", c.head_dim_sliding) != c.head_dim_sliding)
        fail(a + "attention.value_length_swa differs from " + a + "attention.key_length_swa (unsupported)");
    c.rope_dim_sliding = static_cast<int>(file.get_int(a + "rope.dimension_count_swa", c.head_dim_sliding));
    if (c.head_dim_sliding <= 0 || c.head_dim_sliding > kernels::kAttentionMaxHeadDim ||
        c.head_dim_sliding % kernels::kAttentionHeadDimMultiple != 0 || c.rope_dim_sliding <= 0 ||
        c.rope_dim_sliding > c.head_dim_sliding || c.rope_dim_sliding % 2 != 0 || c.head_dim_sliding > c.head_dim)
        fail("unsupported sliding-layer head or RoPE dimension (" + a + "attention.key_length_swa, " + a +
             "rope.dimension_count_swa)");
    const int64_t shared = file.get_int(a + "attention.shared_kv_layers", 0);
    if (shared < 0 || shared >= c.n_layers)
        fail(a + "attention.shared_kv_layers " + std::to_string(shared) + " is not below the layer count " +
             std::to_string(c.n_layers));
    c.kv_shared_layers = static_cast<int>(shared);
    for (int l = c.n_layers - c.kv_shared_layers; l < c.n_layers; ++l)
        if (c.kv_source_of(l) == l)
            fail("KV-sharing layer " + std::to_string(l) + " (" + a + "attention.shared_kv_layers) has no earlier " +
                 (c.is_sliding(l) ? "sliding" : "full") + "-attention layer to read");
    const int64_t per_layer = file.get_int(a + "embedding_length_per_layer_input", 0);
    if (per_layer < 0 || per_layer > (int64_t(1) << 20)) fail(a + "embedding_length_per_layer_input must not be negative");
    c.per_layer_embd_dim = static_cast<int>(per_layer);
    c.value_norm = true;
    // The KV cache: each storing layer's own heads and head size; nothing
    // for a layer that reads another's.
    for (int l = 0; l < c.n_layers; ++l) {
        const int head_dim = c.head_dim_of(l);
        c.layer_kv_shapes.push_back(c.kv_source_of(l) == l ? KvLayerShape{c.kv_heads_of(l), head_dim, head_dim}
                                                            : KvLayerShape{});
    }
}

// Qwen3.5's hybrid layout as llama.cpp's converter writes it: the linear
// layers' sizes (ssm.*), which layers are linear (attention.recurrent_layers,
// else every layer but each full_attention_interval-th), and the
// multi-token-prediction layers counted in block_count (nextn_predict_layers),
// which the forward does not run.
void read_hybrid(const ModelSource& file, const std::string& a, ModelConfig& c) {
    const auto fail = [&](const std::string& why) { throw_model_load("cannot load '" + file.path() + "': " + why); };
    const int64_t blocks = c.n_layers;
    const int64_t nextn = file.get_int(a + "nextn_predict_layers", 0);
    if (nextn < 0 || nextn >= blocks) fail(a + "nextn_predict_layers " + std::to_string(nextn) + " leaves no layers");
    c.n_layers = static_cast<int>(blocks - nextn);
    for (auto [key, field] : {std::pair{"ssm.conv_kernel", &c.conv_kernel}, std::pair{"ssm.state_size", &c.linear_head_dim},
                              std::pair{"ssm.group_count", &c.linear_k_heads},
                              std::pair{"ssm.time_step_rank", &c.linear_v_heads}}) {
        if (file.find(a + key) == nullptr) fail(a + key + " is missing (the linear-attention layers' shape)");
        const int64_t v = file.get_int(a + key, 0);
        if (v <= 0 || v > (1 << 16)) fail(a + key + " " + std::to_string(v) + " is not a positive size");
        *field = static_cast<int>(v);
    }
    if (c.conv_kernel < 2) fail(a + "ssm.conv_kernel must be at least 2");
    if (c.linear_v_heads % c.linear_k_heads != 0)
        fail(a + "ssm.time_step_rank " + std::to_string(c.linear_v_heads) + " (value heads) is not a multiple of " + a +
             "ssm.group_count " + std::to_string(c.linear_k_heads) + " (key heads)");
    const int64_t inner = file.get_int(a + "ssm.inner_size", int64_t(c.linear_v_heads) * c.linear_head_dim);
    if (inner != int64_t(c.linear_v_heads) * c.linear_head_dim)
        fail(a + "ssm.inner_size " + std::to_string(inner) + " is not ssm.time_step_rank x ssm.state_size (value heads "
             "as wide as key heads are all this engine runs)");
    c.recurrent_layers.assign(c.n_layers, false);
    if (file.find(a + "attention.recurrent_layers") != nullptr) {
        const std::vector<int64_t> flags = file.get_int_array(a + "attention.recurrent_layers");
        if (static_cast<int64_t>(flags.size()) != blocks)
            fail(a + "attention.recurrent_layers has " + std::to_string(flags.size()) + " entries, but " + a +
                 "block_count is " + std::to_string(blocks));
        for (int l = 0; l < c.n_layers; ++l) c.recurrent_layers[l] = flags[l] != 0;
    } else {
        const int64_t interval = file.get_int(a + "full_attention_interval", 4);
        if (interval <= 0) fail(a + "full_attention_interval must be positive");
        for (int l = 0; l < c.n_layers; ++l) c.recurrent_layers[l] = (l + 1) % interval != 0;
    }
    if (!c.has_recurrent_layers() || std::all_of(c.recurrent_layers.begin(), c.recurrent_layers.end(), [](bool r) { return r; }))
        fail("the layer pattern has " + std::string(c.has_recurrent_layers() ? "no full-attention" : "no linear-attention") +
             " layer (a " + c.architecture + " model interleaves both)");
    c.attn_output_gate = true;
    const std::string order = file.get_string("vllm.linear_v_heads", "tiled");
    if (order != "tiled" && order != "grouped") fail("unknown vllm.linear_v_heads '" + order + "'");
    c.linear_v_heads_grouped = order == "grouped";
}

// Qwen2.5-VL / Qwen3-VL: rope.dimension_sections, the temporal, height and
// width sections of each head's rotated pairs (llama.cpp writes four, the
// last 0), which together cover them all.
void read_rope_sections(const ModelSource& file, const std::string& a, ModelConfig& c) {
    const std::string key = a + "rope.dimension_sections";
    const auto fail = [&](const std::string& why) {
        throw_model_load("cannot load '" + file.path() + "': " + key + " " + why);
    };
    if (file.find(key) == nullptr) fail("is missing (" + c.architecture + " rotates by multimodal RoPE sections)");
    const std::vector<int64_t> sections = file.get_int_array(key);
    if (sections.size() < 3 || sections.size() > 4 || (sections.size() == 4 && sections[3] != 0))
        fail("must list 3 sections (temporal, height, width; a 4th only if 0)");
    int64_t total = 0;
    for (int i = 0; i < 3; ++i) {
        if (sections[i] < 0) fail("has a negative section");
        total += sections[i];
        c.rope_sections[i] = static_cast<int>(sections[i]);
    }
    if (total != c.rope_dim / 2)
        fail("covers " + std::to_string(total) + " rotated pairs, but each head rotates " +
             std::to_string(c.rope_dim / 2));
}

}  // namespace

int ModelConfig::kv_source_of(int layer) const {
    const int first_shared = n_layers - kv_shared_layers;
    if (layer < first_shared) return layer;
    for (int l = first_shared - 1; l >= 0; --l)
        if (is_sliding(l) == is_sliding(layer)) return l;
    return layer;  // none: read_gemma4_layers refuses the file
}

ModelConfig ModelConfig::from_source(const ModelSource& file) {
    ModelConfig c;
    c.architecture = file.require_string("general.architecture");
    const Architecture* architecture = find_architecture(c.architecture);
    if (architecture == nullptr)
        throw_model_load("cannot load '" + file.path() + "': unsupported architecture '" + c.architecture +
                         "' (supported: " + supported_architectures() + ")");
    c.traits = architecture->traits;
    const ArchitectureTraits* traits = &c.traits;
    // A source whose q/k rows are as trained (Hugging Face, hf_model.h) says
    // so: RoPE then rotates halves whatever llama.cpp's layout for the
    // architecture is.
    const std::string rope_style = traits->mla ? "" : file.get_string("vllm.rope_style", "");
    if (rope_style == "halves")
        c.traits.rope_style = RopeStyle::HALVES;
    else if (!rope_style.empty())
        throw_model_load("cannot load '" + file.path() + "': unknown vllm.rope_style '" + rope_style + "'");

    const std::string a = c.architecture + ".";
    c.n_layers = static_cast<int>(file.require_int(a + "block_count"));
    if (traits->hybrid_linear_attention && c.n_layers > 0) read_hybrid(file, a, c);
    c.dim = static_cast<int>(file.require_int(a + "embedding_length"));
    c.n_heads = static_cast<int>(file.require_int(a + "attention.head_count"));
    if (c.n_layers > 0 && c.n_layers <= (1 << 20)) {
        c.ffn_dim = one_or_per_layer(file, a + "feed_forward_length", c.n_layers, -1, c.layer_ffn_dims);
        c.n_kv_heads = one_or_per_layer(file, a + "attention.head_count_kv", c.n_layers, c.n_heads, c.layer_kv_heads);
        for (int heads : c.layer_kv_heads)
            if (c.n_heads % heads != 0)
                throw_model_load("cannot load '" + file.path() + "': " + a + "attention.head_count_kv " +
                                 std::to_string(heads) + " does not divide the head count");
    }
    c.context_length = static_cast<int>(file.get_int(a + "context_length", 2048));
    c.rope_theta = static_cast<float>(file.get_float(a + "rope.freq_base", 10000.0));
    // The sliding layers' own base: llama.cpp's key (the HF loader writes it
    // from Gemma 3's rope_parameters), else the architecture's fixed one.
    if (file.find(a + "rope.freq_base_swa") != nullptr) {
        const double swa = file.get_float(a + "rope.freq_base_swa", 0.0);
        if (!(swa > 0.0)) throw_model_load("cannot load '" + file.path() + "': " + a + "rope.freq_base_swa must be positive");
        if (c.traits.rope_theta_sliding > 0.0f)
            c.traits.rope_theta_sliding = static_cast<float>(swa);
        else if (static_cast<float>(swa) != c.rope_theta)
            throw_model_load("cannot load '" + file.path() + "': " + a + "rope.freq_base_swa differs from " + a +
                             "rope.freq_base, but " + c.architecture + "'s sliding layers rotate with the global base");
    }
    c.rms_eps = static_cast<float>(file.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
    // An encoder's LayerNorms (with mean and bias) keep their epsilon in rms_eps.
    if (traits->encoder) c.rms_eps = static_cast<float>(file.get_float(a + "attention.layer_norm_epsilon", 1e-12));
    if (c.n_layers <= 0 || c.dim <= 0 || c.ffn_dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
        c.n_heads % c.n_kv_heads != 0 || c.context_length <= 0)
        throw_model_load("cannot load '" + file.path() + "': inconsistent hyperparameters in the GGUF metadata");
    c.head_dim = static_cast<int>(file.get_int(a + "attention.key_length", c.dim / c.n_heads));
    c.rope_dim = static_cast<int>(file.get_int(a + "rope.dimension_count", c.head_dim));
    // The KV cache and attention use head_dim for values too.
    const int64_t value_length = file.get_int(a + "attention.value_length", c.head_dim);
    if (value_length != c.head_dim && !traits->mla)
        throw_model_load("cannot load '" + file.path() + "': attention.value_length " + std::to_string(value_length) +
                         " differs from the key length " + std::to_string(c.head_dim) + " (unsupported)");
    const double attn_factor = file.get_float(a + "rope.scaling.attn_factor", 1.0);
    if (!(attn_factor > 0.0))
        throw_model_load("cannot load '" + file.path() + "': " + a + "rope.scaling.attn_factor must be positive");
    c.rope_magnitude = static_cast<float>(attn_factor);
    // RoPE scaling: linear, YaRN and LongRoPE are implemented; the others
    // change the angles in ways this forward does not model, so loading such
    // a model would silently give wrong results.
    const std::string scaling = file.get_string(a + "rope.scaling.type", "none");
    read_longrope(file, a, scaling, c);
    if (scaling == "linear" || scaling == "yarn") {
        const double factor = file.get_float(a + "rope.scaling.factor", 1.0);
        if (!(factor > 0.0))
            throw_model_load("cannot load '" + file.path() + "': rope.scaling.factor must be positive");
        c.rope_freq_scale = static_cast<float>(1.0 / factor);
        if (scaling == "yarn") read_yarn(file, a, factor, c);
    } else if (scaling != "none" && scaling != "longrope" && !scaling.empty()) {
        throw_model_load("cannot load '" + file.path() + "': unsupported RoPE scaling '" + scaling +
                         "' (rope.scaling.type; supported: none, linear, yarn, longrope)");
    }
    // Gemma 2/3's query_pre_attn_scalar: see ModelConfig::attn_scale.
    const double scale = file.get_float(a + "attention.scale", 0.0);
    if (file.find(a + "attention.scale") != nullptr && !(scale > 0.0))
        throw_model_load("cannot load '" + file.path() + "': " + a + "attention.scale must be positive");
    const bool gemma_27b = traits->layers_of_27b > 0 && c.n_layers == traits->layers_of_27b;
    const int query_scalar = gemma_27b ? c.dim / c.n_heads : c.head_dim;
    c.attn_scale = scale > 0.0 ? static_cast<float>(scale) : 1.0f / std::sqrt(static_cast<float>(query_scalar));
    if (traits->attn_scale > 0.0f) c.attn_scale = traits->attn_scale;
    c.attn_softcap = positive_or_zero(file, a + "attn_logit_softcapping");
    c.final_softcap = positive_or_zero(file, a + "final_logit_softcapping");
    read_experts(file, a, c);
    if (c.n_experts > 0 && traits->experts_refused != nullptr)
        throw_model_load("cannot load '" + file.path() + "': " + traits->experts_refused);
    if (traits->mla) read_mla(file, a, attn_factor, c);
    // Granite's multipliers (llama.cpp's keys; 0 or absent: none).
    for (auto [key, field] : {std::pair{"residual_scale", &c.residual_scale}, std::pair{"logit_scale", &c.logit_scale},
                              std::pair{"embedding_scale", &c.embedding_scale}}) {
        const float v = positive_or_zero(file, a + key);
        if (v > 0.0f) *field = v;
    }
    // What llama.cpp's converter writes for variants these forwards do not
    // run, refused rather than ignored: OLMo 3 (an olmo2 GGUF with sliding
    // layers), multimodal RoPE sections (GLM-4.1V's text part), GLM's extra
    // next-token-prediction layers (counted in block_count).
    if (traits->refuses_sliding_window && file.get_int(a + "attention.sliding_window", 0) > 0)
        throw_model_load("cannot load '" + file.path() + "': " + a + "attention.sliding_window is not supported for " +
                         c.architecture + " (OLMo 3's sliding-window layers are not implemented)");
    // Qwen3.5's GGUFs always carry both: for text its multimodal RoPE is
    // plain RoPE (the three position ids are equal), and read_hybrid leaves
    // its multi-token-prediction layers out.
    if (traits->multimodal_rope != MultimodalRope::NONE) {
        read_rope_sections(file, a, c);
    } else if (!traits->hybrid_linear_attention && file.find(a + "rope.dimension_sections") != nullptr) {
        throw_model_load("cannot load '" + file.path() + "': " + a +
                         "rope.dimension_sections (multimodal RoPE) is not supported for " + c.architecture);
    }
    if (!traits->hybrid_linear_attention && file.get_int(a + "nextn_predict_layers", 0) > 0)
        throw_model_load("cannot load '" + file.path() + "': " + a +
                         "nextn_predict_layers is not supported (next-token-prediction layers are not implemented)");
    if (traits->sliding_window) {
        const int64_t window = file.get_int(a + "attention.sliding_window", 0);
        if (window < 0)
            throw_model_load("cannot load '" + file.path() + "': " + a + "attention.sliding_window must not be negative");
        c.sliding_window = static_cast<int>(window);
    }
    // SmolLM3's layers without RoPE: a Hugging Face source gives the step of
    // its no_rope_layers list (hf_model.cpp; 0: none), a GGUF llama.cpp's fixed one.
    if (file.find("vllm.no_rope_layer_step") != nullptr) {
        if (traits->no_rope_layer_step == 0)
            throw_model_load("cannot load '" + file.path() + "': vllm.no_rope_layer_step is set, but " + c.architecture +
                             " rotates every layer");
        const int64_t step = file.get_int("vllm.no_rope_layer_step", 0);
        if (step < 0)
            throw_model_load("cannot load '" + file.path() + "': vllm.no_rope_layer_step must not be negative");
        c.traits.no_rope_layer_step = static_cast<int>(step);
    }
    if (traits->gemma4_layers) read_gemma4_layers(file, a, c);
    // The paged attention kernel's head sizes; latent attention has its own kernel.
    const bool paged_head = c.is_mla() || (c.head_dim <= kernels::kAttentionMaxHeadDim &&
                                           c.head_dim % kernels::kAttentionHeadDimMultiple == 0);
    if (c.head_dim <= 0 || !paged_head || c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
        throw_model_load("cannot load '" + file.path() + "': unsupported head or RoPE dimension");
    // One attention tile holds a whole GQA group's queries of one token.
    for (int l = 0; l < c.n_layers; ++l) {
        const int group = c.n_heads / c.kv_heads_of(l), most = kernels::attention_max_queries(c.head_dim_of(l));
        if (group > most)
            throw_model_load("cannot load '" + file.path() + "': " + std::to_string(group) + " query heads per KV head of " +
                             std::to_string(c.head_dim_of(l)) + " dims (unsupported: at most " + std::to_string(most) + ")");
    }
    // A linear-attention layer keeps no per-token K/V (its state is per
    // request, in the recurrent-state group).
    if (c.has_recurrent_layers())
        for (int l = 0; l < c.n_layers; ++l)
            c.layer_kv_shapes.push_back(c.is_recurrent(l) ? KvLayerShape{} : KvLayerShape{c.n_kv_heads, c.head_dim, c.head_dim});
    // vocab_size comes from the embedding tensor; the metadata key is optional.
    return c;
}

}  // namespace vllm
