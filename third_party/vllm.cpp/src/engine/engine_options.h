// The options JSON of vllm_engine_load_with_options: engine options beyond
// vllm_model_params, applied over the EngineConfig that from_c made.
//
//   chat_template          string: template text over the model's own (per engine)
//   kv_cache_dtype         vLLM's spellings: "auto" (f16), "float16"/"fp16"/"half"/"f16",
//                          "float32"/"fp32"/"float"/"f32", and "int8" (dtype/kv_dtype.h);
//                          bfloat16 and fp8* refused by name
//   kv_cache_memory_bytes  integer >= 1: the KV budget when num_blocks is unset (per engine)
//   num_threads            integer in [1, 1024]: the engine's thread pool (per engine)
//   isa                    "scalar", "avx2", "avx512", "amx" (x86-64) or "neon" (AArch64):
//                          the kernel build, process-wide (kernels::require_isa)
//   structured_compile_timeout_ms  integer in [1, 3600000]: a constraint's compile budget in time
//   structured_max_grammar_size    integer >= 1: its compiled grammar's size budget (positions)
//
// A null value is the same as the key left out. Each environment variable
// that overrides an option (VLLM_CPP_KV_CACHE_DTYPE, VLLM_CPP_KV_CACHE_MB,
// VLLM_CPP_NUM_THREADS, VLLM_CPP_ISA) wins when it is set: the option is
// then checked but not used.
#pragma once
#include <string_view>

#include "engine/engine_config.h"

namespace vllm {

// INVALID_ARGUMENT naming the key for JSON that is not an object, an
// unknown key, a wrong type or a value out of range.
void apply_engine_options(std::string_view options_json, EngineConfig& config);

}  // namespace vllm
