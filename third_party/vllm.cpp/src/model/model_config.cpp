#include "model/model_config.h"

#include "kernels/cpu/ops.h"
#include "model/model_source.h"
#include "util/error.h"

namespace vllm {

namespace {

struct ArchitectureTraits {
    const char* name;
    RopeStyle rope_style;
    bool qkv_bias;
    bool qk_norm;
};

// Architectures whose forward is the Llama one with these flags. Mistral
// GGUFs use the "llama" architecture name.
const ArchitectureTraits kArchitectures[] = {
    {"llama", RopeStyle::ADJACENT_PAIRS, false, false},
    {"mistral", RopeStyle::ADJACENT_PAIRS, false, false},
    {"qwen2", RopeStyle::HALVES, true, false},
    {"qwen3", RopeStyle::HALVES, false, true},
};

}  // namespace

ModelConfig ModelConfig::from_source(const ModelSource& file) {
    ModelConfig c;
    c.architecture = file.require_string("general.architecture");
    const ArchitectureTraits* traits = nullptr;
    for (const ArchitectureTraits& t : kArchitectures)
        if (c.architecture == t.name) traits = &t;
    if (traits == nullptr) {
        std::string supported;
        for (const ArchitectureTraits& t : kArchitectures) supported += std::string(supported.empty() ? "" : ", ") + t.name;
        throw_model_load("cannot load '" + file.path() + "': unsupported architecture '" + c.architecture +
                         "' (supported: " + supported + ")");
    }
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

    const std::string a = c.architecture + ".";
    c.n_layers = static_cast<int>(file.require_int(a + "block_count"));
    c.dim = static_cast<int>(file.require_int(a + "embedding_length"));
    c.ffn_dim = static_cast<int>(file.require_int(a + "feed_forward_length"));
    c.n_heads = static_cast<int>(file.require_int(a + "attention.head_count"));
    c.n_kv_heads = static_cast<int>(file.get_int(a + "attention.head_count_kv", c.n_heads));
    c.context_length = static_cast<int>(file.get_int(a + "context_length", 2048));
    c.rope_theta = static_cast<float>(file.get_float(a + "rope.freq_base", 10000.0));
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
    // RoPE scaling: only linear is implemented; the others change the
    // angles (and attention scale) in ways this forward does not model, so
    // loading such a model would silently give wrong results.
    const std::string scaling = file.get_string(a + "rope.scaling.type", "none");
    if (scaling == "linear") {
        const double factor = file.get_float(a + "rope.scaling.factor", 1.0);
        if (!(factor > 0.0))
            throw_model_load("cannot load '" + file.path() + "': rope.scaling.factor must be positive");
        c.rope_freq_scale = static_cast<float>(1.0 / factor);
    } else if (scaling != "none" && !scaling.empty()) {
        throw_model_load("cannot load '" + file.path() + "': unsupported RoPE scaling '" + scaling +
                         "' (rope.scaling.type; supported: none, linear)");
    }
    if (c.head_dim <= 0 || c.head_dim > kernels::kAttentionMaxHeadDim ||
        c.head_dim % kernels::kAttentionHeadDimMultiple != 0 || c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
        throw_model_load("cannot load '" + file.path() + "': unsupported head or RoPE dimension");
    // vocab_size comes from the embedding tensor; the metadata key is optional.
    return c;
}

}  // namespace vllm
