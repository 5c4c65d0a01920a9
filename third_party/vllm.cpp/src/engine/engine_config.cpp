#include "engine/engine_config.h"

#include <cstdlib>
#include <cstring>

#include "core/scheduler.h"
#include "util/error.h"

namespace vllm {

namespace {

bool is_set(const char* s) { return s != nullptr && s[0] != '\0'; }

// The effective jump-forward switch: the env var, when set, overrides.
// VLLM_CPP_ENABLE_JUMP_FORWARD is ours (every variable of this project
// starts VLLM_CPP_); VT_ENABLE_JUMP_FORWARD is the name the upstream ABI
// gives it, read when ours is not set.
bool jump_forward_on(int32_t field) {
    const char* env = std::getenv("VLLM_CPP_ENABLE_JUMP_FORWARD");
    if (env == nullptr) env = std::getenv("VT_ENABLE_JUMP_FORWARD");
    if (env != nullptr) {
        if (std::strcmp(env, "1") == 0 || std::strcmp(env, "true") == 0 || std::strcmp(env, "on") == 0) return true;
        if (std::strcmp(env, "0") == 0 || std::strcmp(env, "false") == 0 || std::strcmp(env, "off") == 0) return false;
    }
    return field == 1;
}

}  // namespace

EngineConfig EngineConfig::from_c(const vllm_model_params& p) {
    if (!is_set(p.model_path)) throw_invalid_argument("model_path is required (got NULL or \"\")");
    if (p.enable_prefix_caching < 0 || p.enable_prefix_caching > 2)
        throw_invalid_argument("enable_prefix_caching must be 0 (default), 1 (on) or 2 (off); got " +
                               std::to_string(p.enable_prefix_caching));
    if (p.enable_jump_forward < 0 || p.enable_jump_forward > 2)
        throw_invalid_argument("enable_jump_forward must be 0 (default), 1 (on) or 2 (off); got " +
                               std::to_string(p.enable_jump_forward));
    // Features of later issues: refused by name, never ignored.

    EngineConfig c;
    c.model_path = p.model_path;
    c.block_size = p.block_size > 0 ? p.block_size : kDefaultBlockSize;
    c.num_blocks = p.num_blocks > 0 ? p.num_blocks : 0;
    c.max_model_len = p.max_model_len > 0 ? p.max_model_len : 0;
    c.max_num_seqs = p.max_num_seqs > 0 ? p.max_num_seqs : kDefaultMaxNumSeqs;
    c.max_num_batched_tokens = p.max_num_batched_tokens > 0 ? p.max_num_batched_tokens : kDefaultMaxNumBatchedTokens;
    c.prefix_caching = p.enable_prefix_caching != 2;
    c.jump_forward = jump_forward_on(p.enable_jump_forward);
    c.kv_dtype = kv_dtype_from_env();  // unknown values are refused at load
    if (is_set(p.speculative_config)) c.speculative = SpeculativeConfig::parse(p.speculative_config);
    if (is_set(p.tokenizer_config_path)) c.tokenizer_config_path = p.tokenizer_config_path;
    if (is_set(p.kv_transfer_config)) {
        c.kv_transfer = kv_transfer::KvTransferConfig::parse(p.kv_transfer_config);  // refuses what is wrong
        // Loaded blocks reach requests as prefix-cache hits (kv_connector.h).
        if (c.kv_transfer->loads() && !c.prefix_caching)
            throw_invalid_argument(std::string("kv_transfer_config: kv_role '") + kv_transfer::role_name(c.kv_transfer->role) +
                                   "' loads blocks through the prefix cache, which enable_prefix_caching turns off "
                                   "(use kv_producer, or turn prefix caching on)");
    }
    if (is_set(p.tool_parser)) c.tool_parser = p.tool_parser;
    if (is_set(p.reasoning_parser)) c.reasoning_parser = p.reasoning_parser;
    if (is_set(p.scheduling_policy)) {
        c.scheduling_policy = p.scheduling_policy;
        parse_scheduling_policy(c.scheduling_policy);  // unknown names are refused at load
    }
    if (c.block_size > 1024) throw_invalid_argument("block_size must be at most 1024 (got " + std::to_string(c.block_size) + ")");
    if (c.max_num_batched_tokens < c.max_num_seqs)
        throw_invalid_argument("max_num_batched_tokens (" + std::to_string(c.max_num_batched_tokens) +
                               ") must not be below max_num_seqs (" + std::to_string(c.max_num_seqs) + ")");
    return c;
}

}  // namespace vllm
