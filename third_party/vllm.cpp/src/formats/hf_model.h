// A Hugging Face model directory as a ModelSource: config.json becomes the
// GGUF metadata keys and the safetensors tensors (model.safetensors, or the
// shards model.safetensors.index.json names) get llama.cpp's names, through
// the architecture's row in hf_architecture. Tensors are read in place in
// their stored type; only what llama.cpp's converter would have changed is
// computed here (Gemma's 1 + w norm vectors, Llama 3 RoPE frequency factors).
//
// HF checkpoints keep q/k rows as trained, so RoPE rotates halves: the
// source says so with the metadata key `vllm.rope_style` = "halves", which
// model_config reads (GGUF files of Llama/Mistral carry permuted rows and no
// such key).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "formats/safetensors_file.h"

namespace vllm {

struct HfArchitecture;
namespace json { class Value; }

class HfModel : public ModelSource {
public:
    // Reads config.json and maps every shard; throws Error(VLLM_ERR_MODEL_LOAD)
    // naming the file and the problem.
    explicit HfModel(const std::string& dir);

    void release(const uint8_t* data, size_t n) const override;

    // Keeps only the first `n` rows of the embedding and output matrices
    // (views, nothing copied) where the checkpoint has more: the rows past
    // the tokenizer's vocabulary are padding.
    void limit_vocab(int64_t n);

private:
    void read_config(const json::Value& config, const HfArchitecture& arch);
    // sentence-transformers' pooling (modules.json) and config.json's Matryoshka keys.
    void read_pooling(const json::Value& config, const std::string& arch_prefix);
    // RoPE: transformers before 5 writes rope_theta, partial_rotary_factor and
    // rope_scaling at the top level; transformers 5 writes rope_parameters,
    // one dict or one per layer type (Gemma 3: full_attention and
    // sliding_attention, whose base becomes rope.freq_base_swa).
    // partial_rotary_default: the factor where config.json gives none.
    void read_rope(const json::Value& config, const std::string& arch_prefix, double partial_rotary_default);
    // SmolLM3's no_rope_layers -> vllm.no_rope_layer_step (0: every layer rotates).
    void read_no_rope_layers(const json::Value& config, const std::string& arch_prefix);
    void read_sliding_rope(const json::Value& sliding, const std::string& arch_prefix);
    void read_rope_scaling(const json::Value& scaling, const std::string& arch_prefix);
    // parent[key] when it is an object; nullptr when absent or null; fails
    // naming `where` + key otherwise.
    const json::Value* member_object(const json::Value& parent, const std::string& key, const std::string& where) const;
    // attention.key_length, else embedding_length / head_count (0 when unknown).
    int64_t head_size(const std::string& arch_prefix) const;
    void open_shards();
    void add_tensors(const HfArchitecture& arch, bool tied);
    // gpt-oss's expert banks (HfArchitecture::interleaved_experts) as
    // llama.cpp's tensors; false when `name` is none of them.
    bool add_interleaved_experts(const SafetensorsTensor& t, const std::string& name);
    // DeepSeek-V2 (HfArchitecture::mla): the MLA keys, and kv_b_proj split
    // into attn_k_b / attn_v_b as llama.cpp's converter splits it.
    void read_mla_config(const json::Value& config, const std::string& a);
    void split_kv_b(const SafetensorsTensor& t, const std::string& name);
    // gpt-oss's options the forward fixes (the clamped SwiGLU's constants,
    // sliding layers alternating from the first): refused unless they
    // match; a quantization_config (the published MXFP4 banks) is refused.
    void check_gpt_oss_config(const json::Value& config) const;
    // Gemma 4 (HfArchitecture::gemma4_layers): layer_types, the full layers'
    // head size and KV heads (global_head_dim / num_global_key_value_heads,
    // or transformers 5's per_layer_config), KV sharing, per-layer
    // embeddings, the double-wide MLP and both kinds' RoPE as llama.cpp's
    // converter writes them (proportional RoPE: a rope_freqs tensor);
    // what the forward does not run is refused by name.
    void read_gemma4_config(const json::Value& config, const std::string& arch_prefix);
    // Qwen3.5 (HfArchitecture::gated_delta_net): ssm.inner_size, the layer
    // pattern from layer_types (else full_attention_interval), the value
    // heads' order; a MoE config without intermediate_size gets the experts'.
    void read_gated_delta_net_config(const json::Value& config, const std::string& arch_prefix);
    // A float32 tensor whose values this loader computed.
    void add_computed(const std::string& name, std::vector<int64_t> dims, std::vector<float> values);

    // An encoder's (HfArchitecture::roberta_positions, classifier_labels):
    // RoBERTa's position offset and a classifier's id2label names.
    void read_encoder_extras(const json::Value& config, const HfArchitecture& arch);
    // A classifier's problem_type and cross-encoder activation (vLLM reads
    // them) as vllm.classifier_problem_type / vllm.score_activation.
    void read_classifier_activations(const json::Value& config);

    std::vector<std::unique_ptr<SafetensorsFile>> shards_;
    std::vector<std::vector<float>> computed_;  // storage of add_computed tensors
    int64_t position_offset_ = 0;  // RoBERTa: position_embd rows before the first position
};

}  // namespace vllm
