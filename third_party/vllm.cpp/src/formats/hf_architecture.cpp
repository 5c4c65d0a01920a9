#include "formats/hf_architecture.h"

#include <cctype>

namespace vllm {

namespace {

using Kind = HfConfigKey::Kind;
using Keys = std::vector<HfConfigKey>;
using Names = std::vector<HfTensorName>;

Keys operator+(Keys a, const Keys& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
Names operator+(Names a, const Names& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Every architecture's hyperparameters. head_dim also gives
// attention.value_length (the loader adds it: one HF key, two GGUF keys).
const Keys kCommonConfig = {
    {"hidden_size", "embedding_length", Kind::INT},
    {"num_hidden_layers", "block_count", Kind::INT},
    {"intermediate_size", "feed_forward_length", Kind::INT},
    {"num_attention_heads", "attention.head_count", Kind::INT},
    {"num_key_value_heads", "attention.head_count_kv", Kind::INT},
    {"max_position_embeddings", "context_length", Kind::INT},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon", Kind::FLOAT},
    {"rope_theta", "rope.freq_base", Kind::FLOAT},
    {"head_dim", "attention.key_length", Kind::INT},
    {"vocab_size", "vocab_size", Kind::INT},
};
const Keys kSlidingWindow = {{"sliding_window", "attention.sliding_window", Kind::INT}};
// Gemma 3's sliding layers' RoPE base (transformers 5: rope_parameters, hf_model.cpp).
const Keys kLocalRopeBase = {{"rope_local_base_freq", "rope.freq_base_swa", Kind::FLOAT}};
const Keys kSoftcapping = {
    {"attn_logit_softcapping", "attn_logit_softcapping", Kind::FLOAT},
    {"final_logit_softcapping", "final_logit_softcapping", Kind::FLOAT},
};

const Names kEmbeddingAndHead = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
    {"model.layers.{N}.input_layernorm.weight", "blk.{N}.attn_norm.weight"},
    {"model.layers.{N}.self_attn.o_proj.weight", "blk.{N}.attn_output.weight"},
    {"model.layers.{N}.mlp.down_proj.weight", "blk.{N}.ffn_down.weight"},
};
const Names kSeparateProjections = {
    {"model.layers.{N}.self_attn.q_proj.weight", "blk.{N}.attn_q.weight"},
    {"model.layers.{N}.self_attn.k_proj.weight", "blk.{N}.attn_k.weight"},
    {"model.layers.{N}.self_attn.v_proj.weight", "blk.{N}.attn_v.weight"},
    {"model.layers.{N}.mlp.gate_proj.weight", "blk.{N}.ffn_gate.weight"},
    {"model.layers.{N}.mlp.up_proj.weight", "blk.{N}.ffn_up.weight"},
};
const Names kPreFfnNorm = {{"model.layers.{N}.post_attention_layernorm.weight", "blk.{N}.ffn_norm.weight"}};
const Names kQkvBias = {
    {"model.layers.{N}.self_attn.q_proj.bias", "blk.{N}.attn_q.bias"},
    {"model.layers.{N}.self_attn.k_proj.bias", "blk.{N}.attn_k.bias"},
    {"model.layers.{N}.self_attn.v_proj.bias", "blk.{N}.attn_v.bias"},
};
const Names kQkNorm = {
    {"model.layers.{N}.self_attn.q_norm.weight", "blk.{N}.attn_q_norm.weight"},
    {"model.layers.{N}.self_attn.k_norm.weight", "blk.{N}.attn_k_norm.weight"},
};
// Gemma 2/3: a norm before and after both attention and the MLP.
const Names kSandwichNorms = {
    {"model.layers.{N}.post_attention_layernorm.weight", "blk.{N}.post_attention_norm.weight"},
    {"model.layers.{N}.pre_feedforward_layernorm.weight", "blk.{N}.ffn_norm.weight"},
    {"model.layers.{N}.post_feedforward_layernorm.weight", "blk.{N}.post_ffw_norm.weight"},
};
// Phi-3 fuses q/k/v and gate/up; llama.cpp keeps the fused gate+up as ffn_up.
const Names kPhi3Projections = {
    {"model.layers.{N}.self_attn.qkv_proj.weight", "blk.{N}.attn_qkv.weight"},
    {"model.layers.{N}.mlp.gate_up_proj.weight", "blk.{N}.ffn_up.weight"},
};

const std::vector<HfArchitecture>& architectures() {
    static const std::vector<HfArchitecture> rows = {
        {"LlamaForCausalLM", "llama", kCommonConfig, kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm},
        {"MistralForCausalLM", "llama", kCommonConfig + kSlidingWindow,
         kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm},
        {"Qwen2ForCausalLM", "qwen2", kCommonConfig, kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm + kQkvBias},
        {"Qwen3ForCausalLM", "qwen3", kCommonConfig, kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm + kQkNorm},
        {"GemmaForCausalLM", "gemma", kCommonConfig, kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm,
         /*norm_plus_one=*/true, /*tie_default=*/true},
        {"Gemma2ForCausalLM", "gemma2", kCommonConfig + kSlidingWindow + kSoftcapping,
         kEmbeddingAndHead + kSeparateProjections + kSandwichNorms, true, true},
        {"Gemma3ForCausalLM", "gemma3", kCommonConfig + kSlidingWindow + kLocalRopeBase,
         kEmbeddingAndHead + kSeparateProjections + kSandwichNorms + kQkNorm, true, true},
        {"Gemma3ForConditionalGeneration", "gemma3", kCommonConfig + kSlidingWindow + kLocalRopeBase,
         kEmbeddingAndHead + kSeparateProjections + kSandwichNorms + kQkNorm, true, true, /*text_config=*/true,
         // transformers before 4.52 saved "language_model.model.", later ones "model.language_model.".
         {{"language_model.model.", "model."}, {"model.language_model.", "model."}, {"language_model.lm_head.", "lm_head."}},
         {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."}},
        {"Phi3ForCausalLM", "phi3", kCommonConfig + kSlidingWindow, kEmbeddingAndHead + kPhi3Projections + kPreFfnNorm},
    };
    return rows;
}

// Whether `name` matches `pattern` with a decimal layer number in place of
// "{N}"; the number goes to `layer`.
bool match(const std::string& pattern, const std::string& name, std::string& layer) {
    const size_t hole = pattern.find("{N}");
    if (hole == std::string::npos) return name == pattern;
    const size_t tail = pattern.size() - hole - 3;
    if (name.size() <= hole + tail || name.compare(0, hole, pattern, 0, hole) != 0 ||
        name.compare(name.size() - tail, tail, pattern, hole + 3, tail) != 0)
        return false;
    layer = name.substr(hole, name.size() - hole - tail);
    for (char c : layer)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

const HfArchitecture* find_hf_architecture(const std::string& hf_class) {
    for (const HfArchitecture& a : architectures())
        if (hf_class == a.hf_class) return &a;
    return nullptr;
}

std::string supported_hf_architectures() {
    std::string out;
    for (const HfArchitecture& a : architectures()) out += std::string(out.empty() ? "" : ", ") + a.hf_class;
    return out;
}

std::string gguf_tensor_name(const HfArchitecture& arch, const std::string& hf_name) {
    std::string name = hf_name;
    for (const auto& [from, to] : arch.prefix_rewrites) {
        if (name.rfind(from, 0) != 0) continue;
        name = to + name.substr(std::string(from).size());
        break;
    }
    std::string layer;
    for (const HfTensorName& row : arch.tensors) {
        if (!match(row.hf_name, name, layer)) continue;
        std::string out = row.gguf_name;
        const size_t hole = out.find("{N}");
        if (hole != std::string::npos) out.replace(hole, 3, layer);
        return out;
    }
    return "";
}

bool ignored_tensor(const HfArchitecture& arch, const std::string& hf_name) {
    for (const char* prefix : arch.ignored_prefixes)
        if (hf_name.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace vllm
