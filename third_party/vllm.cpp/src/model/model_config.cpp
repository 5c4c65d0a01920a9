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
void read_experts(const ModelSource& file, const std::string& a, const ArchitectureTraits& traits, ModelConfig& c) {
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
        c.expert_gating = ExpertGating::SOFTMAX;
    else if (gating == 2)
        c.expert_gating = ExpertGating::SIGMOID;
    else if (gating == 3)
        c.expert_gating = ExpertGating::SOFTMAX_OF_PICKED;
    else if (gating != 0)
        fail(a + "expert_gating_func " + std::to_string(gating) +
             " is not supported (supported: 1 softmax, 2 sigmoid, 3 softmax of the picked)");
    for (const char* key : {"expert_group_count", "expert_shared_count"})
        if (file.get_int(a + key, 0) > 1)
            fail(a + key + " " + std::to_string(file.get_int(a + key, 0)) + " is not supported (grouped routing and "
                 "several shared experts are not implemented)");
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

}  // namespace

ModelConfig ModelConfig::from_source(const ModelSource& file) {
    ModelConfig c;
    c.architecture = file.require_string("general.architecture");
    const Architecture* architecture = find_architecture(c.architecture);
    if (architecture == nullptr)
        throw_model_load("cannot load '" + file.path() + "': unsupported architecture '" + c.architecture +
                         "' (supported: " + supported_architectures() + ")");
    const ArchitectureTraits* traits = &architecture->traits;
    c.rope_style = traits->rope_style;
    // A source whose q/k rows are as trained (Hugging Face, hf_model.h) says
    // so: RoPE then rotates halves whatever llama.cpp's layout for the
    // architecture is.
    const std::string rope_style = file.get_string("vllm.rope_style", "");
    if (rope_style == "halves")
        c.rope_style = RopeStyle::HALVES;
    else if (!rope_style.empty())
        throw_model_load("cannot load '" + file.path() + "': unknown vllm.rope_style '" + rope_style + "'");
    c.qkv_bias = traits->qkv_bias;
    c.qk_norm = traits->qk_norm;
    c.ffn_activation = traits->ffn_activation;
    c.post_norms = traits->post_norms;
    c.sliding_pattern = traits->sliding_pattern;
    c.rope_theta_sliding = traits->rope_theta_sliding;
    c.qk_norm_whole = traits->qk_norm_whole;
    c.output_bias = traits->output_bias;
    c.attn_sinks = traits->attn_sinks;
    c.expert_bias = traits->expert_bias;
    c.expert_gating = traits->expert_gating;
    c.ffn_norm_tensor = traits->ffn_norm_tensor;
    c.pre_norms = traits->pre_norms;
    c.no_rope_layer_step = traits->no_rope_layer_step;

    const std::string a = c.architecture + ".";
    c.n_layers = static_cast<int>(file.require_int(a + "block_count"));
    if (traits->hybrid_linear_attention && c.n_layers > 0) read_hybrid(file, a, c);
    c.dim = static_cast<int>(file.require_int(a + "embedding_length"));
    c.ffn_dim = static_cast<int>(file.require_int(a + "feed_forward_length"));
    c.n_heads = static_cast<int>(file.require_int(a + "attention.head_count"));
    c.n_kv_heads = static_cast<int>(file.get_int(a + "attention.head_count_kv", c.n_heads));
    c.context_length = static_cast<int>(file.get_int(a + "context_length", 2048));
    c.rope_theta = static_cast<float>(file.get_float(a + "rope.freq_base", 10000.0));
    // The sliding layers' own base: llama.cpp's key (the HF loader writes it
    // from Gemma 3's rope_parameters), else the architecture's fixed one.
    if (file.find(a + "rope.freq_base_swa") != nullptr) {
        const double swa = file.get_float(a + "rope.freq_base_swa", 0.0);
        if (!(swa > 0.0)) throw_model_load("cannot load '" + file.path() + "': " + a + "rope.freq_base_swa must be positive");
        if (c.rope_theta_sliding > 0.0f)
            c.rope_theta_sliding = static_cast<float>(swa);
        else if (static_cast<float>(swa) != c.rope_theta)
            throw_model_load("cannot load '" + file.path() + "': " + a + "rope.freq_base_swa differs from " + a +
                             "rope.freq_base, but " + c.architecture + "'s sliding layers rotate with the global base");
    }
    c.rms_eps = static_cast<float>(file.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
    if (c.n_layers <= 0 || c.dim <= 0 || c.ffn_dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
        c.n_heads % c.n_kv_heads != 0 || c.context_length <= 0)
        throw_model_load("cannot load '" + file.path() + "': inconsistent hyperparameters in the GGUF metadata");
    c.head_dim = static_cast<int>(file.get_int(a + "attention.key_length", c.dim / c.n_heads));
    c.rope_dim = static_cast<int>(file.get_int(a + "rope.dimension_count", c.head_dim));
    // The KV cache and attention use head_dim for values too.
    const int64_t value_length = file.get_int(a + "attention.value_length", c.head_dim);
    if (value_length != c.head_dim)
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
    c.attn_softcap = positive_or_zero(file, a + "attn_logit_softcapping");
    c.final_softcap = positive_or_zero(file, a + "final_logit_softcapping");
    read_experts(file, a, *traits, c);
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
    if (!traits->hybrid_linear_attention && file.find(a + "rope.dimension_sections") != nullptr)
        throw_model_load("cannot load '" + file.path() + "': " + a +
                         "rope.dimension_sections (multimodal RoPE) is not supported");
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
        c.no_rope_layer_step = static_cast<int>(step);
    }
    if (c.head_dim <= 0 || c.head_dim > kernels::kAttentionMaxHeadDim ||
        c.head_dim % kernels::kAttentionHeadDimMultiple != 0 || c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
        throw_model_load("cannot load '" + file.path() + "': unsupported head or RoPE dimension");
    // A linear-attention layer keeps no per-token K/V (its state is per
    // request, in the recurrent-state group).
    if (c.has_recurrent_layers())
        for (int l = 0; l < c.n_layers; ++l)
            c.layer_kv_shapes.push_back(c.is_recurrent(l) ? KvLayerShape{} : KvLayerShape{c.n_kv_heads, c.head_dim, c.head_dim});
    // vocab_size comes from the embedding tensor; the metadata key is optional.
    return c;
}

}  // namespace vllm
