// EngineConfig::from_c: vllm_model_params mapped onto the engine options'
// parser (engine_fields.h), so the struct and the options JSON meet the
// same limits and error texts.
#include "engine/engine_config.h"

#include <cstdint>

#include "engine/engine_fields.h"

namespace vllm {

namespace {

bool is_set(const char* s) { return s != nullptr && s[0] != '\0'; }

// The struct's fields as the JSON object read_engine_fields takes: v10's
// "unset" (an int <= 0, a NULL or "" string) is a field left out, so it
// gets the parser's default; enable_* go as they are (the parser checks 0-2).
json::Value model_params_fields(const vllm_model_params& p) {
    json::Value o = json::Value::object();
    const auto text = [&](const char* name, const char* value) {
        if (is_set(value)) o.set(name, value);
    };
    const auto count = [&](const char* name, int32_t value) {
        if (value > 0) o.set(name, int64_t(value));
    };
    text("model_path", p.model_path);
    text("tokenizer_config_path", p.tokenizer_config_path);
    count("block_size", p.block_size);
    count("num_blocks", p.num_blocks);
    count("max_model_len", p.max_model_len);
    count("max_num_seqs", p.max_num_seqs);
    text("tool_parser", p.tool_parser);
    text("reasoning_parser", p.reasoning_parser);
    text("speculative_config", p.speculative_config);
    o.set("enable_prefix_caching", int64_t(p.enable_prefix_caching));
    count("max_num_batched_tokens", p.max_num_batched_tokens);
    text("scheduling_policy", p.scheduling_policy);
    text("kv_transfer_config", p.kv_transfer_config);
    o.set("enable_jump_forward", int64_t(p.enable_jump_forward));
    return o;
}

}  // namespace

EngineConfig EngineConfig::from_c(const vllm_model_params& p, std::string_view options_json) {
    json::Value fields = model_params_fields(p);
    add_engine_options(options_json, fields);
    return read_engine_fields(fields);
}

}  // namespace vllm
