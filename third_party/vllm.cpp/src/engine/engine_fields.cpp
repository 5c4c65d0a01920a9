// The engine options' one parser (engine/engine_fields.h): each option's
// type, limits and error text live here and nowhere else.
#include "engine/engine_fields.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "core/scheduler.h"
#include "engine/pooler.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm {

namespace {

using json::field;
using json::out_of_range;
using json::read_int32_in;
using json::read_integer;
using json::wrong_type;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int kMaxBlockSize = 1024;
constexpr int kMaxThreads = 1024;
constexpr int64_t kMaxCompileTimeoutMs = 3600 * 1000;  // an hour: beyond it a client has given up

constexpr const char* kStructFields[] = {
    "model_path",   "tokenizer_config_path", "block_size",        "num_blocks",
    "max_model_len", "max_num_seqs",         "tool_parser",       "reasoning_parser",
    "speculative_config", "enable_prefix_caching", "max_num_batched_tokens", "scheduling_policy",
    "kv_transfer_config", "enable_jump_forward"};

bool one_of(std::string_view s, std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

template <size_t N>
bool listed(std::string_view key, const char* const (&names)[N]) {
    return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return key == n; });
}

template <size_t N>
std::string joined(const char* const (&names)[N]) {
    std::string out;
    for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}

// An environment variable that overrides the option is set.
bool env_overrides(const char* name) { return std::getenv(name) != nullptr; }

const std::string* read_string(const json::Value& o, const char* name) {
    const json::Value* v = field(o, name);
    if (v == nullptr) return nullptr;
    if (!v->is_string()) wrong_type(name, "a string", *v);
    return &v->as_string();
}

void read_count(const json::Value& o, const char* name, int64_t hi, int& target) {
    if (const json::Value* v = field(o, name))
        target = read_int32_in(*v, name, 1, hi, "between 1 and " + std::to_string(hi));
}

int64_t read_int64_in(const json::Value& v, const char* name, int64_t lo, int64_t hi) {
    const int64_t i = read_integer(v, name);
    if (i < lo || i > hi) out_of_range(name, "between " + std::to_string(lo) + " and " + std::to_string(hi), double(i));
    return i;
}

// enable_prefix_caching and enable_jump_forward: 0 (default), 1 (on), 2 (off).
int read_switch(const json::Value& o, const char* name) {
    const json::Value* v = field(o, name);
    return v == nullptr ? 0 : read_int32_in(*v, name, 0, 2, "0 (default), 1 (on) or 2 (off)");
}

// The effective jump-forward switch: the env var, when set, overrides.
// VLLM_CPP_ENABLE_JUMP_FORWARD is ours (every variable of this project
// starts VLLM_CPP_); VT_ENABLE_JUMP_FORWARD is the name the upstream ABI
// gives it, read when ours is not set.
bool jump_forward_on(int field_value) {
    const char* env = std::getenv("VLLM_CPP_ENABLE_JUMP_FORWARD");
    if (env == nullptr) env = std::getenv("VT_ENABLE_JUMP_FORWARD");
    if (env != nullptr) {
        if (one_of(env, {"1", "true", "on"})) return true;
        if (one_of(env, {"0", "false", "off"})) return false;
    }
    return field_value == 1;
}

// vLLM's kv_cache_dtype names for the cache types this engine has, and
// "int8" for its 8-bit cache (dtype/kv_dtype.h; vLLM's 8-bit caches are fp8,
// which this engine does not implement: int8 with a scale per row keeps more
// precision and dequantizes with one conversion).
KvDtype parse_kv_cache_dtype(const std::string& name) {
    if (one_of(name, {"auto", "float16", "fp16", "half", "f16"})) return KvDtype::F16;
    if (one_of(name, {"float32", "fp32", "float", "f32"})) return KvDtype::F32;
    if (name == "int8") return KvDtype::I8;
    if (name == "bfloat16" || name == "bf16")
        throw_invalid_argument("'kv_cache_dtype' '" + name +
                               "': a bfloat16 KV cache is not implemented (use auto/float16, float32 or int8)");
    if (name.rfind("fp8", 0) == 0)
        throw_invalid_argument("'kv_cache_dtype' '" + name +
                               "': an fp8 KV cache is not implemented; the 8-bit cache is 'int8' (int8 with a scale "
                               "per token and KV head)");
    throw_invalid_argument("'kv_cache_dtype' must be auto, float16 (fp16, half), float32 (fp32) or int8 (got '" +
                           name + "')");
}

// model_path .. scheduling_policy: what vllm_model_params carries.
void read_model_fields(const json::Value& o, EngineConfig& c) {
    const std::string* path = read_string(o, "model_path");
    if (path == nullptr || path->empty()) throw_invalid_argument("model_path is required (got NULL or \"\")");
    c.model_path = *path;
    if (const std::string* s = read_string(o, "tokenizer_config_path")) c.tokenizer_config_path = *s;
    read_count(o, "block_size", kMaxBlockSize, c.block_size);
    read_count(o, "num_blocks", kInt32Max, c.num_blocks);
    read_count(o, "max_model_len", kInt32Max, c.max_model_len);
    read_count(o, "max_num_seqs", kInt32Max, c.max_num_seqs);
    read_count(o, "max_num_batched_tokens", kInt32Max, c.max_num_batched_tokens);
    if (c.max_num_batched_tokens < c.max_num_seqs)
        throw_invalid_argument("'max_num_batched_tokens' (" + std::to_string(c.max_num_batched_tokens) +
                               ") must not be below max_num_seqs (" + std::to_string(c.max_num_seqs) + ")");
    const int prefix_switch = read_switch(o, "enable_prefix_caching");
    c.prefix_caching = prefix_switch != 2;
    c.prefix_caching_requested = prefix_switch == 1;
    c.jump_forward = jump_forward_on(read_switch(o, "enable_jump_forward"));
    if (const std::string* s = read_string(o, "tool_parser")) c.tool_parser = *s;
    if (const std::string* s = read_string(o, "reasoning_parser")) c.reasoning_parser = *s;
    if (const std::string* s = read_string(o, "scheduling_policy")) {
        parse_scheduling_policy(*s);  // unknown names are refused at load
        c.scheduling_policy = *s;
    }
    if (const std::string* s = read_string(o, "speculative_config")) c.speculative = SpeculativeConfig::parse(*s);
    if (const std::string* s = read_string(o, "kv_transfer_config")) {
        c.kv_transfer = kv_transfer::KvTransferConfig::parse(*s);  // refuses what is wrong
        // Loaded blocks reach requests as prefix-cache hits (kv_connector.h).
        if (c.kv_transfer->loads() && !c.prefix_caching)
            throw_invalid_argument(std::string("kv_transfer_config: kv_role '") + kv_transfer::role_name(c.kv_transfer->role) +
                                   "' loads blocks through the prefix cache, which enable_prefix_caching turns off "
                                   "(use kv_producer, or turn prefix caching on)");
    }
}

// chat_template .. structured_max_grammar_size: the options JSON's keys.
void read_option_fields(const json::Value& o, EngineConfig& c) {
    if (const std::string* text = read_string(o, "chat_template")) {
        if (text->empty()) throw_invalid_argument("'chat_template' must not be empty");
        c.chat_template = *text;
    }
    c.kv_dtype = kv_dtype_from_env();  // unknown values are refused at load
    if (const std::string* name = read_string(o, "kv_cache_dtype")) {
        const KvDtype dtype = parse_kv_cache_dtype(*name);
        if (!env_overrides("VLLM_CPP_KV_CACHE_DTYPE")) c.kv_dtype = dtype;
    }
    if (const json::Value* v = field(o, "kv_cache_memory_bytes")) {
        const int64_t bytes = read_int64_in(*v, "kv_cache_memory_bytes", 1, std::numeric_limits<int64_t>::max());
        if (c.num_blocks > 0) throw_invalid_argument("'kv_cache_memory_bytes' and num_blocks are both set: give one");
        if (!env_overrides("VLLM_CPP_KV_CACHE_MB")) c.kv_cache_memory_bytes = bytes;
    }
    int threads = 0;
    read_count(o, "num_threads", kMaxThreads, threads);
    if (threads > 0 && !env_overrides("VLLM_CPP_NUM_THREADS")) c.num_threads = threads;
    if (const std::string* name = read_string(o, "isa")) {
        if (!one_of(*name, {"scalar", "avx2", "avx512", "amx", "neon"}))
            throw_invalid_argument("'isa' must be scalar, avx2, avx512, amx or neon (got '" + *name + "')");
        if (!env_overrides("VLLM_CPP_ISA")) c.isa = *name;
    }
    if (const json::Value* v = field(o, "structured_compile_timeout_ms"))
        c.compile_budget.timeout_ms = read_int64_in(*v, "structured_compile_timeout_ms", 1, kMaxCompileTimeoutMs);
    if (const json::Value* v = field(o, "structured_max_grammar_size"))
        c.compile_budget.max_grammar_size = read_int64_in(*v, "structured_max_grammar_size", 1, kInt32Max);
    if (const json::Value* v = field(o, "enable_lora")) {
        if (!v->is_bool()) wrong_type("enable_lora", "a boolean", *v);
        c.enable_lora = v->as_bool();
    }
    if (const json::Value* v = field(o, "max_loras")) c.max_loras = static_cast<int>(read_int64_in(*v, "max_loras", 1, 1024));
    if (const json::Value* v = field(o, "max_lora_rank"))
        c.max_lora_rank = static_cast<int>(read_int64_in(*v, "max_lora_rank", 1, 1024));
}

// runner .. hf_overrides: the pooling options (issue 43).
// pooler_config's token pooling keys (vLLM's tok_pooling_type, step_tag_id,
// returned_token_ids); false for another key.
bool read_token_pooling_key(const std::string& key, const json::Value& value, EngineConfig& c) {
    if (key == "tok_pooling_type") {
        c.tok_pooling_type = json::read_string(value, "pooler_config.tok_pooling_type");
        parse_step_pooling(*c.tok_pooling_type, "pooler_config.tok_pooling_type");
    } else if (key == "step_tag_id") {
        if (!value.is_null())
            c.step_tag_id = json::read_int32_in(value, "pooler_config.step_tag_id", 0, INT32_MAX, "a token id");
    } else if (key == "returned_token_ids") {
        if (value.is_null()) return true;
        json::require_array(value, "pooler_config.returned_token_ids");
        for (const json::Value& id : value.items())
            c.returned_token_ids.push_back(
                json::read_int32_in(id, "pooler_config.returned_token_ids", 0, INT32_MAX, "a list of column indices"));
    } else {
        return false;
    }
    return true;
}

void read_pooling_fields(const json::Value& o, EngineConfig& c) {
    if (const std::string* name = read_string(o, "runner")) {
        if (!one_of(*name, {"auto", "generate", "pooling", "both"}))
            throw_invalid_argument("'runner' must be auto, generate, pooling or both (got '" + *name + "')");
        c.runner = *name;
    }
    if (const std::string* name = read_string(o, "convert")) {
        if (!one_of(*name, {"auto", "none", "embed"}))
            throw_invalid_argument("'convert' must be auto, none or embed (got '" + *name +
                                   "'; classify, reward and score heads are not supported)");
        c.convert = *name;
        if (c.convert == "embed" && c.runner == "generate")
            throw_invalid_argument("'convert' embed makes a pooling model: it needs runner pooling (or auto), not generate");
    }
    if (const json::Value* v = field(o, "pooler_config")) {
        json::require_object(*v, "pooler_config");
        for (const auto& [key, value] : v->members()) {
            if (key == "pooling_type") c.pooling_type = json::read_string(value, "pooler_config.pooling_type");
            else if (key == "normalize") c.pooling_normalize = json::read_bool(value, "pooler_config.normalize");
            else if (key == "seq_pooling_type") c.pooling_type = json::read_string(value, "pooler_config.seq_pooling_type");
            else if (read_token_pooling_key(key, value, c)) continue;
            else throw_invalid_argument("'pooler_config' key '" + key + "' is not supported (pooling_type, "
                                        "seq_pooling_type, normalize, tok_pooling_type, step_tag_id, returned_token_ids)");
        }
    }
    if (const json::Value* v = field(o, "hf_overrides")) {
        json::require_object(*v, "hf_overrides");
        for (const auto& [key, value] : v->members()) {
            if (key == "is_matryoshka") {
                c.is_matryoshka = json::read_bool(value, "hf_overrides.is_matryoshka");
            } else if (key == "matryoshka_dimensions") {
                json::require_array(value, "hf_overrides.matryoshka_dimensions");
                for (const json::Value& d : value.items())
                    c.matryoshka_dimensions.push_back(
                        read_int32_in(d, "hf_overrides.matryoshka_dimensions", 1, kInt32Max, "a positive integer"));
            } else if (key == "classifier_from_token") {
                json::require_array(value, "hf_overrides.classifier_from_token");
                for (const json::Value& t : value.items())
                    c.classifier_from_token.push_back(json::read_string(t, "hf_overrides.classifier_from_token"));
                if (c.classifier_from_token.size() != 2)
                    throw_invalid_argument("'hf_overrides.classifier_from_token' must name two tokens (the false and "
                                           "the true answer, as Qwen3-Reranker's [\"no\", \"yes\"])");
            } else if (key == "is_original_qwen3_reranker") {
                c.is_original_qwen3_reranker = json::read_bool(value, "hf_overrides.is_original_qwen3_reranker");
            } else if (key == "architectures") {
                // vLLM's Qwen3ForSequenceClassification override: accepted for the
                // one sequence-classification form served (the score head below).
                json::require_array(value, "hf_overrides.architectures");
                for (const json::Value& a : value.items()) {
                    const std::string& name = json::read_string(a, "hf_overrides.architectures");
                    if (name.size() < 25 || name.compare(name.size() - 25, 25, "ForSequenceClassification") != 0)
                        throw_invalid_argument("'hf_overrides.architectures' " + name +
                                               " is not supported (only *ForSequenceClassification, with "
                                               "classifier_from_token)");
                }
            } else {
                throw_invalid_argument("'hf_overrides' key '" + key +
                                       "' is not supported (is_matryoshka, matryoshka_dimensions, architectures, "
                                       "classifier_from_token, is_original_qwen3_reranker)");
            }
        }
        if (c.is_original_qwen3_reranker && c.classifier_from_token.empty())
            throw_invalid_argument("'hf_overrides.is_original_qwen3_reranker' needs classifier_from_token "
                                   "([\"no\", \"yes\"])");
    }
}

}  // namespace

EngineConfig read_engine_fields(const json::Value& fields) {
    if (!fields.is_object()) wrong_type("engine fields", "a JSON object", fields);
    for (const auto& member : fields.members())
        if (!listed(member.first, kStructFields) && !listed(member.first, kEngineOptionKeys))
            throw_invalid_argument("unknown engine option '" + member.first + "' (known: " + joined(kStructFields) +
                                   ", " + joined(kEngineOptionKeys) + ")");
    EngineConfig c;
    read_model_fields(fields, c);
    read_option_fields(fields, c);
    read_pooling_fields(fields, c);
    return c;
}

void add_engine_options(std::string_view options_json, json::Value& fields) {
    if (options_json.empty()) return;
    const json::Value options = json::parse_object(options_json, "options_json");
    for (const auto& [key, value] : options.members()) {
        if (!listed(key, kEngineOptionKeys))
            throw_invalid_argument("unknown engine option '" + key + "' in options_json (known: " +
                                   joined(kEngineOptionKeys) + ")");
        fields.set(key, value);
    }
}

}  // namespace vllm
