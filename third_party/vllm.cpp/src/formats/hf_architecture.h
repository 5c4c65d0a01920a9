// What a Hugging Face checkpoint of each architecture looks like, one row
// per architecture: the `architectures` class name in config.json, the
// GGUF architecture it becomes, which config.json keys give which GGUF
// hyperparameters, and which tensor names become which llama.cpp names.
// Adding an architecture to the HF loader is adding its row here (the
// forward itself is model_config's and llama's). tests/support/hf_convert.py holds
// the same rows for the test-side conversion (the dense architectures': the
// mixtures of experts are tested on directories transformers itself saved).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace vllm {

// config.json key -> `<arch>.<gguf_suffix>` metadata.
struct HfConfigKey {
    enum class Kind { INT, FLOAT, BOOL };
    const char* hf_key;
    const char* gguf_suffix;
    Kind kind;
};

// HF tensor name -> llama.cpp name; "{N}" stands for the layer number and
// "{E}" for an expert's.
struct HfTensorName {
    const char* hf_name;
    const char* gguf_name;
};

struct HfArchitecture {
    const char* hf_class;   // config.json "architectures"[0], e.g. "LlamaForCausalLM"
    const char* gguf_name;  // general.architecture, e.g. "llama"
    std::vector<HfConfigKey> config;
    std::vector<HfTensorName> tensors;
    // llama.cpp's converter stores Gemma's RMSNorm weights as 1 + w; the HF
    // checkpoint holds w. Applies to every tensor whose HF name ends in
    // "norm.weight".
    bool norm_plus_one = false;
    // transformers' default for tie_word_embeddings when config.json omits it.
    bool tie_default = false;
    // Multimodal checkpoints whose text decoder is this architecture: its
    // hyperparameters are under config.json's "text_config", its tensors
    // under another prefix (rewritten to the text model's "model." /
    // "lm_head."), and the other towers' tensors are not read.
    bool text_config = false;
    std::vector<std::pair<const char*, const char*>> prefix_rewrites;
    std::vector<const char*> ignored_prefixes;
    // Mixture-of-experts options of config.json this engine does not run:
    // each key with the only value it accepts ("" when any value but null, 0,
    // false or an empty list is refused), checked by the loader.
    std::vector<std::pair<const char*, const char*>> refused_unless;
    // gpt-oss: the experts are stacked banks of transformers' GptOssExperts,
    // gate_up_proj [experts, dim, 2 * ffn] with gate and up in alternating
    // columns (and its bias [experts, 2 * ffn]), down_proj [experts, ffn,
    // dim]: the loader turns them into llama.cpp's ffn_{gate,up,down}_exps
    // (float copies; the row names map to ffn_gate_up_exps for it to split).
    bool interleaved_experts = false;
    // Qwen3.5's Gated DeltaNet layers: config.json's linear_* sizes and
    // layer_types become llama.cpp's ssm.* and attention.recurrent_layers
    // keys, A_log becomes ssm_a = -exp(A_log) as llama.cpp's converter
    // writes it, the gated norm (linear_attn.norm) keeps its weight (the
    // other norms are 1 + w), and the value heads stay in the checkpoint's
    // grouped order (vllm.linear_v_heads).
    bool gated_delta_net = false;
    // GLM-4: the checkpoint's q/k rows already are in the GGUF architecture's
    // RoPE layout (adjacent pairs; llama.cpp's converter keeps them as
    // trained), so the loader leaves the architecture's RoPE style.
    bool rope_layout_as_gguf = false;
    // SmolLM3: config.json's no_rope_layers (1: the layer rotates, 0: not)
    // becomes vllm.no_rope_layer_step; a list that is not "every n-th layer
    // without" is refused.
    bool no_rope_layers = false;
    // partial_rotary_factor where config.json has none (GLM-4: transformers' 0.5).
    double partial_rotary_default = 1.0;
    // Gemma 4: its per-layer settings (HfModel::read_gemma4_config).
    bool gemma4_layers = false;
    // DeepSeek-V2's multi-head latent attention: the loader writes the MLA
    // keys as llama.cpp's converter does (the cached row's key/value lengths,
    // key_length_mla, one KV head) and splits kv_b_proj into attn_k_b and
    // attn_v_b (float copies), as that converter does.
    bool mla = false;
    // RoBERTa's (XLM-RoBERTa's) learned positions start at pad_token_id + 1:
    // the loader drops the rows before (a view of the rest) and shortens
    // context_length by as many, as llama.cpp's converter does.
    bool roberta_positions = false;
    // A *ForSequenceClassification: config.json's id2label names become
    // `<arch>.classifier.output_labels`, as llama.cpp's converter writes them.
    bool classifier_labels = false;
};

// The row for `hf_class`, or nullptr.
const HfArchitecture* find_hf_architecture(const std::string& hf_class);
// "LlamaForCausalLM, MistralForCausalLM, ..." for error messages.
std::string supported_hf_architectures();
// The llama.cpp name of HF tensor `hf_name` under `arch`, or "" when the
// architecture has no such tensor.
std::string gguf_tensor_name(const HfArchitecture& arch, const std::string& hf_name);
// Whether `hf_name` belongs to a part of the checkpoint the text model does
// not use (a vision tower, a projector).
bool ignored_tensor(const HfArchitecture& arch, const std::string& hf_name);

}  // namespace vllm
