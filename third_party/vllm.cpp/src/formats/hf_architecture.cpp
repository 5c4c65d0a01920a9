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
using Refusals = std::vector<std::pair<const char*, const char*>>;
Refusals operator+(Refusals a, const Refusals& b) {
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

// Mixture of experts: the expert count's key differs by family.
const Keys kExperts = {
    {"num_experts_per_tok", "expert_used_count", Kind::INT},
    {"moe_intermediate_size", "expert_feed_forward_length", Kind::INT},
    {"shared_expert_intermediate_size", "expert_shared_feed_forward_length", Kind::INT},
    {"norm_topk_prob", "expert_weights_norm", Kind::BOOL},
};
const Keys kNumExperts = {{"num_experts", "expert_count", Kind::INT}};
const Keys kNumLocalExperts = {{"num_local_experts", "expert_count", Kind::INT}};
const Keys kGraniteMultipliers = {
    {"embedding_multiplier", "embedding_scale", Kind::FLOAT},
    {"residual_multiplier", "residual_scale", Kind::FLOAT},
    {"attention_multiplier", "attention.scale", Kind::FLOAT},
    {"logits_scaling", "logit_scale", Kind::FLOAT},
};
// transformers 5 saves one tensor per expert (it fuses them in memory only).
const Names kExpertMlps = {
    {"model.layers.{N}.mlp.gate.weight", "blk.{N}.ffn_gate_inp.weight"},
    {"model.layers.{N}.mlp.experts.{E}.gate_proj.weight", "blk.{N}.ffn_gate.{E}.weight"},
    {"model.layers.{N}.mlp.experts.{E}.up_proj.weight", "blk.{N}.ffn_up.{E}.weight"},
    {"model.layers.{N}.mlp.experts.{E}.down_proj.weight", "blk.{N}.ffn_down.{E}.weight"},
};
const Names kSharedExpert = {
    {"model.layers.{N}.mlp.shared_expert.gate_proj.weight", "blk.{N}.ffn_gate_shexp.weight"},
    {"model.layers.{N}.mlp.shared_expert.up_proj.weight", "blk.{N}.ffn_up_shexp.weight"},
    {"model.layers.{N}.mlp.shared_expert.down_proj.weight", "blk.{N}.ffn_down_shexp.weight"},
    {"model.layers.{N}.mlp.shared_expert_gate.weight", "blk.{N}.ffn_gate_inp_shexp.weight"},
};
const Names kMixtralExperts = {
    {"model.layers.{N}.block_sparse_moe.gate.weight", "blk.{N}.ffn_gate_inp.weight"},
    {"model.layers.{N}.block_sparse_moe.experts.{E}.w1.weight", "blk.{N}.ffn_gate.{E}.weight"},
    {"model.layers.{N}.block_sparse_moe.experts.{E}.w2.weight", "blk.{N}.ffn_down.{E}.weight"},
    {"model.layers.{N}.block_sparse_moe.experts.{E}.w3.weight", "blk.{N}.ffn_up.{E}.weight"},
};
// Granite MoE stacks its experts: input_linear [experts, gate rows then up
// rows, dim], output_linear [experts, dim, ffn].
const Names kGraniteExperts = {
    {"model.layers.{N}.block_sparse_moe.router.layer.weight", "blk.{N}.ffn_gate_inp.weight"},
    {"model.layers.{N}.block_sparse_moe.input_linear.weight", "blk.{N}.ffn_gate_up_exps.weight"},
    {"model.layers.{N}.block_sparse_moe.output_linear.weight", "blk.{N}.ffn_down_exps.weight"},
};
// gpt-oss: biases and sinks on the attention, its pre-MLP norm under
// llama.cpp's post_attention_norm, a router with a bias, and the expert
// banks (HfArchitecture::interleaved_experts).
const Names kGptOssTensors = {
    {"model.layers.{N}.self_attn.o_proj.bias", "blk.{N}.attn_output.bias"},
    {"model.layers.{N}.self_attn.sinks", "blk.{N}.attn_sinks.weight"},
    {"model.layers.{N}.post_attention_layernorm.weight", "blk.{N}.post_attention_norm.weight"},
    {"model.layers.{N}.mlp.router.weight", "blk.{N}.ffn_gate_inp.weight"},
    {"model.layers.{N}.mlp.router.bias", "blk.{N}.ffn_gate_inp.bias"},
    {"model.layers.{N}.mlp.experts.gate_up_proj", "blk.{N}.ffn_gate_up_exps.weight"},
    {"model.layers.{N}.mlp.experts.gate_up_proj_bias", "blk.{N}.ffn_gate_up_exps.bias"},
    {"model.layers.{N}.mlp.experts.down_proj", "blk.{N}.ffn_down_exps.weight"},
    {"model.layers.{N}.mlp.experts.down_proj_bias", "blk.{N}.ffn_down_exps.bias"},
};
// gpt-oss's experts are as wide as its intermediate_size.
const Keys kGptOssExperts = {{"intermediate_size", "expert_feed_forward_length", Kind::INT}};
const Names kAttentionProjections(kSeparateProjections.begin(), kSeparateProjections.begin() + 3);
const Names kAttention = kEmbeddingAndHead + kAttentionProjections;
// DeepSeek-V2 (HfArchitecture::mla): head_dim in its config.json is the
// rope part's (transformers sets it so), so the common keys are not used;
// qk_nope_head_dim and v_head_dim are read by the loader.
const Keys kDeepseek2Config = {
    {"hidden_size", "embedding_length", Kind::INT},
    {"num_hidden_layers", "block_count", Kind::INT},
    {"intermediate_size", "feed_forward_length", Kind::INT},
    {"num_attention_heads", "attention.head_count", Kind::INT},
    {"max_position_embeddings", "context_length", Kind::INT},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon", Kind::FLOAT},
    {"rope_theta", "rope.freq_base", Kind::FLOAT},
    {"vocab_size", "vocab_size", Kind::INT},
    {"kv_lora_rank", "attention.kv_lora_rank", Kind::INT},
    {"q_lora_rank", "attention.q_lora_rank", Kind::INT},
    {"qk_rope_head_dim", "rope.dimension_count", Kind::INT},
    {"v_head_dim", "attention.value_length_mla", Kind::INT},
    {"first_k_dense_replace", "leading_dense_block_count", Kind::INT},
    {"n_routed_experts", "expert_count", Kind::INT},
    {"num_experts_per_tok", "expert_used_count", Kind::INT},
    {"moe_intermediate_size", "expert_feed_forward_length", Kind::INT},
    {"n_shared_experts", "expert_shared_count", Kind::INT},
    {"routed_scaling_factor", "expert_weights_scale", Kind::FLOAT},
    {"n_group", "expert_group_count", Kind::INT},
    {"topk_group", "expert_group_used_count", Kind::INT},
};
const Names kDeepseek2Tensors = {
    {"model.layers.{N}.self_attn.q_proj.weight", "blk.{N}.attn_q.weight"},
    {"model.layers.{N}.self_attn.q_a_proj.weight", "blk.{N}.attn_q_a.weight"},
    {"model.layers.{N}.self_attn.q_a_layernorm.weight", "blk.{N}.attn_q_a_norm.weight"},
    {"model.layers.{N}.self_attn.q_b_proj.weight", "blk.{N}.attn_q_b.weight"},
    {"model.layers.{N}.self_attn.kv_a_proj_with_mqa.weight", "blk.{N}.attn_kv_a_mqa.weight"},
    {"model.layers.{N}.self_attn.kv_a_layernorm.weight", "blk.{N}.attn_kv_a_norm.weight"},
    {"model.layers.{N}.self_attn.kv_b_proj.weight", "blk.{N}.attn_kv_b.weight"},
    {"model.layers.{N}.mlp.gate_proj.weight", "blk.{N}.ffn_gate.weight"},
    {"model.layers.{N}.mlp.up_proj.weight", "blk.{N}.ffn_up.weight"},
    {"model.layers.{N}.mlp.shared_experts.gate_proj.weight", "blk.{N}.ffn_gate_shexp.weight"},
    {"model.layers.{N}.mlp.shared_experts.up_proj.weight", "blk.{N}.ffn_up_shexp.weight"},
    {"model.layers.{N}.mlp.shared_experts.down_proj.weight", "blk.{N}.ffn_down_shexp.weight"},
};
// transformers' DeepseekV2 never renormalises the picked experts' weights
// whatever norm_topk_prob says, while llama.cpp's converter passes it on
// (and llama.cpp renormalises): one checkpoint would give two models, so a
// true value is refused. Biases are not read.
const std::vector<std::pair<const char*, const char*>> kDeepseek2Refused = {
    {"norm_topk_prob", ""}, {"attention_bias", ""}, {"mlp_bias", ""}};

// Qwen MoE layers are all sparse unless these say otherwise, and attend
// to the whole context unless use_sliding_window.
const std::vector<std::pair<const char*, const char*>> kEverySparse = {
    {"decoder_sparse_step", "1"}, {"mlp_only_layers", ""}, {"use_sliding_window", ""}};

// Qwen3.5 (hf_model.cpp adds ssm.inner_size and the layer pattern).
const Keys kGatedDeltaNetConfig = {
    {"linear_conv_kernel_dim", "ssm.conv_kernel", Kind::INT},
    {"linear_key_head_dim", "ssm.state_size", Kind::INT},
    {"linear_num_key_heads", "ssm.group_count", Kind::INT},
    {"linear_num_value_heads", "ssm.time_step_rank", Kind::INT},
};
const Names kGatedDeltaNet = {
    {"model.layers.{N}.post_attention_layernorm.weight", "blk.{N}.post_attention_norm.weight"},
    {"model.layers.{N}.linear_attn.in_proj_qkv.weight", "blk.{N}.attn_qkv.weight"},
    {"model.layers.{N}.linear_attn.in_proj_z.weight", "blk.{N}.attn_gate.weight"},
    {"model.layers.{N}.linear_attn.in_proj_b.weight", "blk.{N}.ssm_beta.weight"},
    {"model.layers.{N}.linear_attn.in_proj_a.weight", "blk.{N}.ssm_alpha.weight"},
    {"model.layers.{N}.linear_attn.conv1d.weight", "blk.{N}.ssm_conv1d.weight"},
    {"model.layers.{N}.linear_attn.dt_bias", "blk.{N}.ssm_dt.bias"},
    {"model.layers.{N}.linear_attn.A_log", "blk.{N}.ssm_a"},
    {"model.layers.{N}.linear_attn.norm.weight", "blk.{N}.ssm_norm.weight"},
    {"model.layers.{N}.linear_attn.out_proj.weight", "blk.{N}.ssm_out.weight"},
};
const Names kQwen35Tensors = kEmbeddingAndHead + kSeparateProjections + kQkNorm + kGatedDeltaNet;
const Names kQwen35MoeTensors = kAttention + kQkNorm + kGatedDeltaNet + kExpertMlps + kSharedExpert;
// The published checkpoints are multimodal: the text model under
// model.language_model., the vision tower and the multi-token-prediction
// head (mtp.) not read.
const std::vector<std::pair<const char*, const char*>> kQwen35TextPrefix = {{"model.language_model.", "model."}};
const std::vector<const char*> kQwen35Ignored = {"model.visual.", "mtp."};

HfArchitecture qwen35_row(const char* hf_class, const char* gguf_name, bool experts, bool multimodal) {
    HfArchitecture row{hf_class, gguf_name, kCommonConfig + kGatedDeltaNetConfig + (experts ? kExperts + kNumExperts : Keys{}),
                       experts ? kQwen35MoeTensors : kQwen35Tensors, /*norm_plus_one=*/true};
    row.text_config = multimodal;
    if (multimodal) row.prefix_rewrites = kQwen35TextPrefix;
    row.ignored_prefixes = kQwen35Ignored;
    row.gated_delta_net = true;
    return row;
}

// SmolLM3, OLMo 2, Granite 3, GLM-4.
const Names kLlamaTensors = kEmbeddingAndHead + kSeparateProjections + kPreFfnNorm;
// OLMo 2 has no input_layernorm or pre-MLP norm: its norms follow attention and the MLP.
const Names kPostNorms = {
    {"model.layers.{N}.post_attention_layernorm.weight", "blk.{N}.post_attention_norm.weight"},
    {"model.layers.{N}.post_feedforward_layernorm.weight", "blk.{N}.post_ffw_norm.weight"},
};
// GLM-4: Phi-3's fused gate_up (ffn_up), and a norm after each sublayer.
const Names kGlm4Tensors = {
    {"model.layers.{N}.mlp.gate_up_proj.weight", "blk.{N}.ffn_up.weight"},
    {"model.layers.{N}.post_self_attn_layernorm.weight", "blk.{N}.post_attention_norm.weight"},
    {"model.layers.{N}.post_mlp_layernorm.weight", "blk.{N}.post_ffw_norm.weight"},
};
// Biases these forwards do not have (attention_bias, mlp_bias) are refused by name.
const Refusals kNoBiases = {{"attention_bias", ""}, {"mlp_bias", ""}};

HfArchitecture with(HfArchitecture row, void (*edit)(HfArchitecture&)) {
    edit(row);
    return row;
}

// Gemma 4: per-layer embeddings, each layer's output scale (a buffer
// transformers saves without ".weight"); its vision and audio towers (the
// ConditionalGeneration checkpoints) are not read.
const Names kGemma4Tensors = {
    {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
    {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
    {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    {"model.layers.{N}.per_layer_input_gate.weight", "blk.{N}.inp_gate.weight"},
    {"model.layers.{N}.per_layer_projection.weight", "blk.{N}.proj.weight"},
    {"model.layers.{N}.post_per_layer_input_norm.weight", "blk.{N}.post_norm.weight"},
    {"model.layers.{N}.layer_scalar", "blk.{N}.layer_output_scale.weight"},
};
const Names kGemma4 = kEmbeddingAndHead + kSeparateProjections + kSandwichNorms + kQkNorm + kGemma4Tensors;
const Keys kGemma4Config = kCommonConfig + kSlidingWindow + kSoftcapping;

// BERT's encoder (transformers' BertModel, as sentence-transformers saves
// it): its own names, LayerNorms with biases, no output head; the pooler
// transformers adds is not read (llama.cpp's converter drops it too).
HfArchitecture bert_row() {
    HfArchitecture row{"BertModel", "bert",
                       {{"hidden_size", "embedding_length", Kind::INT},
                        {"num_hidden_layers", "block_count", Kind::INT},
                        {"intermediate_size", "feed_forward_length", Kind::INT},
                        {"num_attention_heads", "attention.head_count", Kind::INT},
                        {"max_position_embeddings", "context_length", Kind::INT},
                        {"layer_norm_eps", "attention.layer_norm_epsilon", Kind::FLOAT},
                        {"vocab_size", "vocab_size", Kind::INT}},
                       {{"embeddings.word_embeddings.weight", "token_embd.weight"},
                        {"embeddings.position_embeddings.weight", "position_embd.weight"},
                        {"embeddings.token_type_embeddings.weight", "token_types.weight"},
                        {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
                        {"embeddings.LayerNorm.bias", "token_embd_norm.bias"}}};
    const char* const parts[][2] = {
        {"attention.self.query", "attn_q"},          {"attention.self.key", "attn_k"},
        {"attention.self.value", "attn_v"},          {"attention.output.dense", "attn_output"},
        {"attention.output.LayerNorm", "attn_output_norm"}, {"intermediate.dense", "ffn_up"},
        {"output.dense", "ffn_down"},                {"output.LayerNorm", "layer_output_norm"}};
    // The names live as long as the row table (a static), so the strings are kept here.
    static std::vector<std::string> names;
    if (names.empty())
        for (const auto& part : parts)
            for (const char* kind : {".weight", ".bias"}) {
                names.push_back(std::string("encoder.layer.{N}.") + part[0] + kind);
                names.push_back(std::string("blk.{N}.") + part[1] + kind);
            }
    for (size_t i = 0; i < names.size(); i += 2) row.tensors.push_back({names[i].c_str(), names[i + 1].c_str()});
    row.tie_default = true;  // no lm_head
    row.rope_layout_as_gguf = true;  // no RoPE
    row.ignored_prefixes = {"pooler.", "embeddings.position_ids"};
    row.refused_unless = {{"hidden_act", "\"gelu\""}, {"position_embedding_type", "\"absolute\""}};
    return row;
}

// Cross-encoders and XLM-RoBERTa: BERT's row under another class name, the
// base model under `prefix` ("bert.", "roberta."), with its classification
// head's tensors as llama.cpp names them (cls, cls.output).
HfArchitecture encoder_variant(const char* hf_class, const char* prefix, bool roberta,
                               std::vector<HfTensorName> head) {
    HfArchitecture row = bert_row();
    row.hf_class = hf_class;
    if (*prefix != '\0') row.prefix_rewrites = {{prefix, ""}};
    row.tensors.insert(row.tensors.end(), head.begin(), head.end());
    row.roberta_positions = roberta;
    row.classifier_labels = !head.empty();
    // A BERT classifier's pooler is its head's dense layer; XLM-RoBERTa's
    // classifier has its own (its pooler, in XLMRobertaModel, is not read).
    row.ignored_prefixes = {"pooler.", "embeddings.position_ids", "bert.embeddings.position_ids",
                            "roberta.embeddings.position_ids"};
    return row;
}

const std::vector<HfTensorName> kRobertaClassifier = {{"classifier.dense.weight", "cls.weight"},
                                                      {"classifier.dense.bias", "cls.bias"},
                                                      {"classifier.out_proj.weight", "cls.output.weight"},
                                                      {"classifier.out_proj.bias", "cls.output.bias"}};
const std::vector<HfTensorName> kBertClassifier = {{"pooler.dense.weight", "cls.weight"},
                                                   {"pooler.dense.bias", "cls.bias"},
                                                   {"classifier.weight", "cls.output.weight"},
                                                   {"classifier.bias", "cls.output.bias"}};

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
        {"Qwen2MoeForCausalLM", "qwen2moe", kCommonConfig + kExperts + kNumExperts,
         kAttention + kPreFfnNorm + kQkvBias + kExpertMlps + kSharedExpert, false, false, false, {}, {}, kEverySparse},
        {"Qwen3MoeForCausalLM", "qwen3moe", kCommonConfig + kExperts + kNumExperts + kNumLocalExperts,
         kAttention + kPreFfnNorm + kQkNorm + kExpertMlps, false, false, false, {}, {}, kEverySparse},
        {"MixtralForCausalLM", "llama", kCommonConfig + kSlidingWindow + kExperts + kNumLocalExperts,
         kAttention + kPreFfnNorm + kMixtralExperts},
        {"OlmoeForCausalLM", "olmoe", kCommonConfig + kExperts + kNumExperts,
         kAttention + kPreFfnNorm + kQkNorm + kExpertMlps, false, false, false, {}, {}, {{"clip_qkv", ""}}},
        {"GraniteMoeForCausalLM", "granitemoe", kCommonConfig + kExperts + kNumLocalExperts + kGraniteMultipliers,
         kAttention + kPreFfnNorm + kGraniteExperts},
        {"GptOssForCausalLM", "gpt-oss", kCommonConfig + kSlidingWindow + kExperts + kNumLocalExperts + kGptOssExperts,
         kAttention + kQkvBias + kGptOssTensors, false, false, false, {}, {}, {}, /*interleaved_experts=*/true},
        with({"SmolLM3ForCausalLM", "smollm3", kCommonConfig, kLlamaTensors, false, /*tie_default=*/true},
             [](HfArchitecture& a) {
                 a.refused_unless = kNoBiases + Refusals{{"use_sliding_window", ""}};
                 a.no_rope_layers = true;
             }),
        with({"Olmo2ForCausalLM", "olmo2", kCommonConfig, kEmbeddingAndHead + kSeparateProjections + kQkNorm + kPostNorms},
             [](HfArchitecture& a) { a.refused_unless = kNoBiases + Refusals{{"sliding_window", ""}, {"clip_qkv", ""}}; }),
        with({"GraniteForCausalLM", "granite", kCommonConfig + kGraniteMultipliers, kLlamaTensors},
             [](HfArchitecture& a) { a.refused_unless = kNoBiases; }),
        with({"Glm4ForCausalLM", "glm4", kCommonConfig,
              kEmbeddingAndHead + kAttentionProjections + kQkvBias + kPreFfnNorm + kGlm4Tensors},
             [](HfArchitecture& a) {
                 a.refused_unless = {{"attention_bias", "true"}};
                 a.rope_layout_as_gguf = true;
                 a.partial_rotary_default = 0.5;
             }),
        with({"Gemma4ForCausalLM", "gemma4", kGemma4Config, kGemma4, false, /*tie_default=*/true},
             [](HfArchitecture& a) { a.gemma4_layers = true; }),
        with({"Gemma4ForConditionalGeneration", "gemma4", kGemma4Config, kGemma4, false, true, /*text_config=*/true,
              {{"model.language_model.", "model."}},
              {"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio."}},
             [](HfArchitecture& a) { a.gemma4_layers = true; }),
        with({"DeepseekV2ForCausalLM", "deepseek2", kDeepseek2Config,
              kEmbeddingAndHead + kPreFfnNorm + kExpertMlps + kDeepseek2Tensors},
             [](HfArchitecture& a) {
                 a.refused_unless = kDeepseek2Refused;
                 a.mla = true;
             }),
        qwen35_row("Qwen3_5ForCausalLM", "qwen35", false, false),
        qwen35_row("Qwen3_5ForConditionalGeneration", "qwen35", false, true),
        qwen35_row("Qwen3_5MoeForCausalLM", "qwen35moe", true, false),
        qwen35_row("Qwen3_5MoeForConditionalGeneration", "qwen35moe", true, true),
        bert_row(),
        encoder_variant("XLMRobertaModel", "", /*roberta=*/true, {}),
        encoder_variant("XLMRobertaForSequenceClassification", "roberta.", true, kRobertaClassifier),
        encoder_variant("BertForSequenceClassification", "bert.", false, kBertClassifier),
    };
    return rows;
}

// Whether `name` matches `pattern`, each "{N}" / "{E}" hole standing for a
// decimal number; the numbers go to `holes`, in order.
bool match(const std::string& pattern, const std::string& name, std::vector<std::string>& holes) {
    holes.clear();
    size_t p = 0, n = 0;
    while (true) {
        const size_t hole = pattern.find('{', p);
        const size_t literal = (hole == std::string::npos ? pattern.size() : hole) - p;
        if (name.compare(n, literal, pattern, p, literal) != 0) return false;
        p += literal, n += literal;
        if (hole == std::string::npos) return n == name.size();
        size_t digits = n;
        while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
        if (digits == n) return false;
        holes.push_back(name.substr(n, digits - n));
        n = digits, p = hole + 3;
    }
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
    std::vector<std::string> holes;
    for (const HfTensorName& row : arch.tensors) {
        if (!match(row.hf_name, name, holes)) continue;
        std::string out = row.gguf_name;
        for (const std::string& number : holes) {
            const size_t hole = out.find('{');
            out.replace(hole, 3, number);
        }
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
