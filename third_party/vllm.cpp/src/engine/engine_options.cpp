#include "engine/engine_options.h"

#include <cstdlib>
#include <initializer_list>
#include <limits>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/json.h"

namespace vllm {

namespace {

constexpr const char* kKnownKeys =
    "chat_template, kv_cache_dtype, kv_cache_memory_bytes, num_threads, isa, structured_compile_timeout_ms, "
    "structured_max_grammar_size";
constexpr int kMaxThreads = 1024;
constexpr int64_t kMaxCompileTimeoutMs = 3600 * 1000;  // an hour: beyond it a client has given up

// An environment variable that overrides the option is set.
bool env_overrides(const char* name) { return std::getenv(name) != nullptr; }

[[noreturn]] void bad_value(const std::string& key, const std::string& expected, const json::Value& got) {
    throw_invalid_argument("engine option '" + key + "' must be " + expected + " (got " +
                           json::dump(got) + ")");
}

const std::string& read_string(const std::string& key, const json::Value& v) {
    if (!v.is_string()) bad_value(key, "a string", v);
    return v.as_string();
}

int64_t read_int(const std::string& key, const json::Value& v, int64_t lo, int64_t hi) {
    if (!v.is_int() || v.as_int() < lo || v.as_int() > hi)
        bad_value(key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), v);
    return v.as_int();
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (s == n) return true;
    return false;
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
        throw_invalid_argument("engine option 'kv_cache_dtype' '" + name +
                               "': a bfloat16 KV cache is not implemented (use auto/float16, float32 or int8)");
    if (name.rfind("fp8", 0) == 0)
        throw_invalid_argument("engine option 'kv_cache_dtype' '" + name +
                               "': an fp8 KV cache is not implemented; the 8-bit cache is 'int8' (int8 with a scale "
                               "per token and KV head)");
    throw_invalid_argument("engine option 'kv_cache_dtype' must be auto, float16 (fp16, half), float32 (fp32) or int8; "
                           "got '" + name + "'");
}

}  // namespace

void apply_engine_options(std::string_view options_json, EngineConfig& config) {
    if (options_json.empty()) return;
    const json::Value options = json::parse_object(options_json, "options_json");
    for (const auto& [key, value] : options.members()) {
        if (value.is_null()) continue;
        if (key == "chat_template") {
            const std::string& text = read_string(key, value);
            if (text.empty()) throw_invalid_argument("engine option 'chat_template' must not be empty");
            config.chat_template = text;
        } else if (key == "kv_cache_dtype") {
            const KvDtype dtype = parse_kv_cache_dtype(read_string(key, value));
            if (!env_overrides("VLLM_CPP_KV_CACHE_DTYPE")) config.kv_dtype = dtype;
        } else if (key == "kv_cache_memory_bytes") {
            const int64_t bytes = read_int(key, value, 1, std::numeric_limits<int64_t>::max());
            if (config.num_blocks > 0)
                throw_invalid_argument("engine option 'kv_cache_memory_bytes' and num_blocks are both set: give one");
            if (!env_overrides("VLLM_CPP_KV_CACHE_MB")) config.kv_cache_memory_bytes = bytes;
        } else if (key == "num_threads") {
            const int n = static_cast<int>(read_int(key, value, 1, kMaxThreads));
            if (!env_overrides("VLLM_CPP_NUM_THREADS")) config.num_threads = n;
        } else if (key == "isa") {
            const std::string& name = read_string(key, value);
            if (!one_of(name, {"scalar", "avx2", "avx512", "amx", "neon"}))
                throw_invalid_argument("engine option 'isa' must be scalar, avx2, avx512, amx or neon; got '" + name +
                                       "'");
            if (!env_overrides("VLLM_CPP_ISA")) config.isa = name;
        } else if (key == "structured_compile_timeout_ms") {
            config.compile_budget.timeout_ms = read_int(key, value, 1, kMaxCompileTimeoutMs);
        } else if (key == "structured_max_grammar_size") {
            config.compile_budget.max_grammar_size = read_int(key, value, 1, std::numeric_limits<int32_t>::max());
        } else {
            throw_invalid_argument("unknown engine option '" + key + "' in options_json (known: " + kKnownKeys + ")");
        }
    }
}

}  // namespace vllm
