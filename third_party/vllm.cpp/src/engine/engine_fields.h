// The one parser of the engine's load options, under the names vLLM's
// engine arguments (and vllm_model_params) give them: every EngineConfig is
// built through it. EngineConfig::from_c maps a vllm_model_params onto its
// fields and adds the options JSON of vllm_engine_load_with_options, so each
// option has one set of limits and one error text (INVALID_ARGUMENT naming
// the option: "'num_threads' must be between 1 and 1024 (got 0)"), whichever
// way it came in.
//
// vllm_model_params' fields (what the struct's "<= 0", NULL or "" means is
// decided by from_c, which leaves such a field out):
//   model_path             string, required: GGUF file or HF model directory
//   tokenizer_config_path  string: replaces a directory's tokenizer_config.json
//   block_size             integer in [1, 1024] (default 16)
//   num_blocks             integer >= 1 (default: sized from the KV budget)
//   max_model_len          integer >= 1 (default: the model's context length)
//   max_num_seqs           integer >= 1 (default 8)
//   max_num_batched_tokens integer >= 1 and >= max_num_seqs (default 2048)
//   tool_parser, reasoning_parser  strings (checked at the first chat call)
//   speculative_config     JSON text (spec_decode/speculative_config.h)
//   kv_transfer_config     JSON text (kv_transfer/kv_transfer_config.h); a
//                          loading role needs prefix caching on
//   enable_prefix_caching  0 (default: on), 1 (on) or 2 (off)
//   enable_jump_forward    0 (default: off), 1 (on) or 2 (off); overridden by
//                          VLLM_CPP_ENABLE_JUMP_FORWARD (alias VT_ENABLE_JUMP_FORWARD)
//   scheduling_policy      "fcfs" (default), "priority" or "lpm"
// The options JSON's keys (kEngineOptionKeys):
//   runner                 "auto", "generate", "pooling" or "both" (vLLM's --runner; both: this engine's own)
//   convert                "auto", "none" or "embed" (vLLM's --convert; embed: runner pooling)
//   pooler_config          object: pooling_type ("CLS", "MEAN", "LAST"), normalize (bool)
//   hf_overrides           object: is_matryoshka (bool), matryoshka_dimensions (integers); nothing else
//   chat_template          string, not empty: template text over the model's own
//   kv_cache_dtype         vLLM's spellings: "auto" (f16), "float16"/"fp16"/"half"/"f16",
//                          "float32"/"fp32"/"float"/"f32", and "int8" (dtype/kv_dtype.h);
//                          bfloat16 and fp8* refused by name
//   kv_cache_memory_bytes  integer >= 1: the KV budget; num_blocks must then be unset
//   num_threads            integer in [1, 1024]: the engine's thread pool
//   isa                    "scalar", "avx2", "avx512", "amx" (x86-64) or "neon" (AArch64):
//                          the kernel build, process-wide (kernels::require_isa)
//   structured_compile_timeout_ms  integer in [1, 3600000]: a constraint's compile budget in time
//   structured_max_grammar_size    integer >= 1: its compiled grammar's size budget (positions)
//   enable_lora            boolean (default false): LoRA adapters may be registered (vLLM's --enable-lora)
//   max_loras              integer in [1, 1024] (default 1): adapters resident at once, and in one batch
//   max_lora_rank          integer in [1, 1024] (default 16): the largest rank an adapter may have
// A null value is the same as the field left out. Each environment variable
// that overrides an option (VLLM_CPP_KV_CACHE_DTYPE, VLLM_CPP_KV_CACHE_MB,
// VLLM_CPP_NUM_THREADS, VLLM_CPP_ISA) wins when it is set: the option is
// then checked but not used.
#pragma once
#include <string_view>

#include "engine/engine_config.h"
#include "util/json.h"

namespace vllm {

// The keys the options JSON of vllm_engine_load_with_options takes (the
// struct's fields travel in the struct: v10's test pins a struct name in the
// options JSON as refused).
constexpr const char* kEngineOptionKeys[] = {
    "chat_template", "kv_cache_dtype", "kv_cache_memory_bytes", "num_threads", "isa",
    "structured_compile_timeout_ms", "structured_max_grammar_size",
    "runner", "convert", "pooler_config", "hf_overrides",
    "enable_lora", "max_loras", "max_lora_rank",
    "mmproj", "limit_mm_per_prompt"};

// The EngineConfig of the fields above that `fields` has (absent or null:
// the default), environment overrides applied and the relations between
// fields checked; INVALID_ARGUMENT naming the field for a value of the wrong
// type or out of range, and for a field it does not know.
EngineConfig read_engine_fields(const json::Value& fields);

// `fields` with the options JSON's members ("" or NULL: none) added: a
// key given there replaces the same key of `fields`. INVALID_ARGUMENT for
// text that is not a JSON object or a key not in kEngineOptionKeys (named
// with the known ones).
void add_engine_options(std::string_view options_json, json::Value& fields);

}  // namespace vllm
