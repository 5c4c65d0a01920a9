// The engine's load-time options, defaults resolved: built only by the
// engine options' parser (engine/engine_fields.h), from a vllm_model_params
// and the options JSON of vllm_engine_load_with_options (from_c).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv_cache/kv_cache.h"
#include "kv_transfer/kv_transfer_config.h"
#include "spec_decode/speculative_config.h"
#include "structured/grammar_compiler.h"
#include "vllm.h"

namespace vllm {

struct EngineConfig {
    std::string model_path;
    // Replaces a Hugging Face directory's tokenizer_config.json ("" = the
    // directory's own); unused for GGUF files (hf_tokenizer_config.h).
    std::string tokenizer_config_path;
    int block_size = kDefaultBlockSize;
    int num_blocks = 0;              // 0: from the memory budget
    int max_model_len = 0;           // 0: the model's context length
    int max_num_seqs = kDefaultMaxNumSeqs;
    int max_num_batched_tokens = kDefaultMaxNumBatchedTokens;
    bool prefix_caching = true;      // enable_prefix_caching 0 (default, on for these dense models) or 1
    bool prefix_caching_requested = false;  // enable_prefix_caching 1: asked for by name (refused where unsupported)
    std::string scheduling_policy = "fcfs";
    bool jump_forward = false;       // enable_jump_forward, overridden by VLLM_CPP_ENABLE_JUMP_FORWARD (alias VT_ENABLE_JUMP_FORWARD)
    // Chat output parsers by name ("" = detect from the chat template). Not
    // checked here: the spec refuses unknown names at the first chat call.
    std::string tool_parser;
    std::string reasoning_parser;
    // KV cache element type: VLLM_CPP_KV_CACHE_DTYPE ("f32", "f16" or "i8"),
    // read by from_c, like the other environment overrides (kv_cache.h).
    KvDtype kv_dtype = kDefaultKvDtype;
    // kv_transfer_config, parsed (unset: no connector).
    std::optional<kv_transfer::KvTransferConfig> kv_transfer;

    // Options of vllm_engine_load_with_options (engine_fields.h); each is
    // left unset where its environment override is set.
    // The chat template text, over the model's own (GGUF or directory).
    std::optional<std::string> chat_template;
    int64_t kv_cache_memory_bytes = 0;  // 0: VLLM_CPP_KV_CACHE_MB or kDefaultKvCacheMb
    int num_threads = 0;                // 0: ThreadPool::default_thread_count()
    // LoRA (engine/lora_registry.h): vLLM's enable_lora, max_loras, max_lora_rank.
    bool enable_lora = false;
    int max_loras = 1;
    int max_lora_rank = 16;
    std::string isa;                    // "": the process's kernels (kernels::require_isa)
    // structured_compile_timeout_ms and structured_max_grammar_size: what
    // one constraint's compile (and each of its masks) may take.
    structured::CompileBudget compile_budget;
    // speculative_config, parsed; unset: no speculation.
    std::optional<SpeculativeConfig> speculative;

    // Pooling (issue 43; engine/pooler.h). runner: "auto" (the model's
    // kind), "generate", "pooling" or "both" (a decoder embedder serving
    // both kinds in one engine); convert: "auto", "none" or "embed" (a
    // generation model run as an embedder: runner pooling). pooler_config
    // and hf_overrides' Matryoshka keys set over the model's own choice.
    std::string runner = "auto";
    std::string convert = "auto";
    std::optional<std::string> pooling_type;  // vLLM's name, checked
    std::optional<bool> pooling_normalize;
    std::optional<bool> is_matryoshka;
    std::vector<int32_t> matryoshka_dimensions;
    // Scoring (issue 43): hf_overrides' classifier_from_token (two token
    // texts, [false, true]: Qwen3-Reranker's ["no", "yes"]) makes the last
    // row's logits of those tokens a score head; is_original_qwen3_reranker
    // also wraps query and document in Qwen3-Reranker's prompt.
    std::vector<std::string> classifier_from_token;
    bool is_original_qwen3_reranker = false;
    // Token pooling (issue 43): pooler_config's tok_pooling_type ("ALL" or
    // "STEP"), step_tag_id and returned_token_ids (engine/pooler.h).
    std::optional<std::string> tok_pooling_type;
    std::optional<int32_t> step_tag_id;
    std::vector<int32_t> returned_token_ids;

    static constexpr int kDefaultBlockSize = 16;
    static constexpr int kDefaultMaxNumSeqs = 8;
    static constexpr int kDefaultMaxNumBatchedTokens = 2048;
    // KV budget when num_blocks is unset: VLLM_CPP_KV_CACHE_MB or this.
    static constexpr int64_t kDefaultKvCacheMb = 1024;

    // The struct's fields under their names (an int field <= 0 and a NULL or
    // "" string left out: the default), with the options JSON's keys ("":
    // none), read by the one parser (engine_fields.h). INVALID_ARGUMENT
    // naming the option for a value it refuses.
    static EngineConfig from_c(const vllm_model_params& params, std::string_view options_json = {});
};

}  // namespace vllm
