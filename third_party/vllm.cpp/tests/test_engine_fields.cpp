// The engine options' one parser (engine/engine_fields.h) without a model:
// each out-of-range or mistyped option gets the same INVALID_ARGUMENT text
// whether it comes as a field of the parser's object, a vllm_model_params
// field (EngineConfig::from_c) or a key of the options JSON; the struct's
// own conventions (an int <= 0 and a NULL or "" string: the default,
// enable_* 0/1/2) map onto the parser unchanged; the options JSON refuses
// unknown keys and the struct's fields; environment overrides win.
#include <cstdlib>
#include <functional>
#include <string>

#include "check.h"
#include "refusal.h"
#include "engine/engine_fields.h"
#include "util/error.h"
#include "util/json.h"

using namespace vllm;
using vllm_test::check;

using vllm_test::refusal;

namespace {

vllm_model_params model_params() {
    vllm_model_params p = vllm_model_params_default();
    p.model_path = "m.gguf";
    return p;
}

// The refusal of `members` read as the parser's object (with a model_path).
std::string fields_refusal(const std::string& members) {
    return refusal([&] { (void)read_engine_fields(json::parse(R"({"model_path": "m.gguf", )" + members + "}")); });
}

std::string struct_refusal(const std::function<void(vllm_model_params&)>& set) {
    return refusal([&] {
        vllm_model_params p = model_params();
        set(p);
        (void)EngineConfig::from_c(p);
    });
}

std::string options_refusal(const std::string& members) {
    return refusal([&] { (void)EngineConfig::from_c(model_params(), "{" + members + "}"); });
}

struct StructCase {
    const char* fields;  // JSON members of the parser's object
    std::function<void(vllm_model_params&)> set;  // the same values in the struct
    const char* message;  // the one error text
};

void test_struct_fields_read_like_json() {
    const StructCase cases[] = {
        {R"("block_size": 2000)", [](vllm_model_params& p) { p.block_size = 2000; },
         "'block_size' must be between 1 and 1024 (got 2000)"},
        {R"("enable_prefix_caching": 7)", [](vllm_model_params& p) { p.enable_prefix_caching = 7; },
         "'enable_prefix_caching' must be 0 (default), 1 (on) or 2 (off) (got 7)"},
        {R"("enable_jump_forward": -1)", [](vllm_model_params& p) { p.enable_jump_forward = -1; },
         "'enable_jump_forward' must be 0 (default), 1 (on) or 2 (off) (got -1)"},
        {R"("max_num_seqs": 64, "max_num_batched_tokens": 32)",
         [](vllm_model_params& p) { p.max_num_seqs = 64, p.max_num_batched_tokens = 32; },
         "'max_num_batched_tokens' (32) must not be below max_num_seqs (64)"},
        {R"("max_num_seqs": 4096)", [](vllm_model_params& p) { p.max_num_seqs = 4096; },
         "'max_num_batched_tokens' (2048) must not be below max_num_seqs (4096)"},
        {R"("scheduling_policy": "sjf")", [](vllm_model_params& p) { p.scheduling_policy = "sjf"; },
         "unknown scheduling_policy 'sjf' (expected 'fcfs', 'priority' or 'lpm')"},
        {R"("kv_transfer_config": "{\"kv_connector\": \"Nope\", \"kv_role\": \"kv_both\"}")",
         [](vllm_model_params& p) { p.kv_transfer_config = R"({"kv_connector": "Nope", "kv_role": "kv_both"})"; },
         "kv_transfer_config: unknown kv_connector 'Nope'"},
        {R"("enable_prefix_caching": 2, "kv_transfer_config": "{\"kv_connector\": \"SharedStorageConnector\", \"kv_role\": \"kv_consumer\", \"kv_connector_extra_config\": {\"shared_storage_path\": \"/tmp/x\"}}")",
         [](vllm_model_params& p) {
             p.enable_prefix_caching = 2;
             p.kv_transfer_config = R"({"kv_connector": "SharedStorageConnector", "kv_role": "kv_consumer", )"
                                    R"("kv_connector_extra_config": {"shared_storage_path": "/tmp/x"}})";
         },
         "kv_transfer_config: kv_role 'kv_consumer' loads blocks through the prefix cache"},
    };
    for (const StructCase& c : cases) {
        const std::string through_json = fields_refusal(c.fields);
        const std::string through_struct = struct_refusal(c.set);
        check(through_json.rfind(c.message, 0) == 0, std::string(c.fields) + ": " + through_json);
        check(through_struct == through_json, std::string(c.fields) + " as a struct field: " + through_struct);
    }
    check(fields_refusal(R"("max_model_len": "64")") == "'max_model_len' must be an integer (got string)",
          "a mistyped count: " + fields_refusal(R"("max_model_len": "64")"));
    check(fields_refusal(R"("tool_parser": 1)") == "'tool_parser' must be a string (got int)", "a mistyped name");
}

struct OptionCase {
    const char* fields;   // JSON members of an options JSON
    const char* message;  // the one error text (its start)
};

void test_options_read_like_fields() {
    const OptionCase cases[] = {
        {R"("num_threads": 0)", "'num_threads' must be between 1 and 1024 (got 0)"},
        {R"("num_threads": 100000)", "'num_threads' must be between 1 and 1024 (got 100000)"},
        {R"("num_threads": true)", "'num_threads' must be an integer (got bool"},
        {R"("kv_cache_memory_bytes": 0)", "'kv_cache_memory_bytes' must be between 1 and 9223372036854775807"},
        {R"("kv_cache_memory_bytes": 1.5)", "'kv_cache_memory_bytes' must be an integer (got float)"},
        {R"("kv_cache_dtype": "int4")", "'kv_cache_dtype' must be auto, float16 (fp16, half), float32 (fp32) or int8"},
        {R"("kv_cache_dtype": "fp8_e4m3")", "'kv_cache_dtype' 'fp8_e4m3': an fp8 KV cache is not implemented"},
        {R"("kv_cache_dtype": "bfloat16")", "'kv_cache_dtype' 'bfloat16': a bfloat16 KV cache is not implemented"},
        {R"("isa": "sse4")", "'isa' must be scalar, avx2, avx512, amx or neon (got 'sse4')"},
        {R"("chat_template": "")", "'chat_template' must not be empty"},
        {R"("chat_template": 3)", "'chat_template' must be a string (got int)"},
        {R"("structured_compile_timeout_ms": 0)", "'structured_compile_timeout_ms' must be between 1 and 3600000 (got 0)"},
        {R"("structured_max_grammar_size": -5)", "'structured_max_grammar_size' must be between 1 and 2147483647 (got -5)"},
    };
    for (const OptionCase& c : cases) {
        const std::string through_options = options_refusal(c.fields);
        check(through_options.rfind(c.message, 0) == 0, std::string(c.fields) + ": " + through_options);
        check(fields_refusal(c.fields) == through_options, std::string(c.fields) + " as a field");
    }
    vllm_model_params with_blocks = model_params();
    with_blocks.num_blocks = 64;
    check(refusal([&] { (void)EngineConfig::from_c(with_blocks, R"({"kv_cache_memory_bytes": 1000000})"); }) ==
              "'kv_cache_memory_bytes' and num_blocks are both set: give one",
          "a KV budget and a block count");
}

void test_struct_conventions() {
    vllm_model_params p = model_params();
    p.block_size = -3;
    p.num_blocks = 0;
    p.max_model_len = -1;
    p.max_num_seqs = 0;
    p.max_num_batched_tokens = -7;
    p.tool_parser = "";
    p.reasoning_parser = nullptr;
    p.speculative_config = "";
    p.scheduling_policy = "";
    const EngineConfig c = EngineConfig::from_c(p);
    check(c.model_path == "m.gguf" && c.block_size == EngineConfig::kDefaultBlockSize && c.num_blocks == 0 &&
              c.max_model_len == 0 && c.max_num_seqs == EngineConfig::kDefaultMaxNumSeqs &&
              c.max_num_batched_tokens == EngineConfig::kDefaultMaxNumBatchedTokens,
          "an int field <= 0 is the default");
    check(c.tool_parser.empty() && c.reasoning_parser.empty() && !c.speculative && c.scheduling_policy == "fcfs" &&
              !c.kv_transfer && c.prefix_caching,
          "a NULL or \"\" string is unset");
    p = model_params();
    p.block_size = 32;
    p.max_num_seqs = 4;
    p.enable_prefix_caching = 2;
    p.scheduling_policy = "priority";
    p.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 3})";
    const EngineConfig set = EngineConfig::from_c(p);
    check(set.block_size == 32 && set.max_num_seqs == 4 && !set.prefix_caching && set.scheduling_policy == "priority" &&
              set.speculative && set.speculative->num_speculative_tokens == 3,
          "set fields are read");
    check(struct_refusal([](vllm_model_params& q) { q.model_path = nullptr; }) ==
              "model_path is required (got NULL or \"\")",
          "model_path is required");
    check(struct_refusal([](vllm_model_params& q) { q.model_path = ""; }) == "model_path is required (got NULL or \"\")",
          "an empty model_path");
}

void test_options_json() {
    const std::string struct_name = options_refusal(R"("max_model_len": 64)");
    check(struct_name.rfind("unknown engine option 'max_model_len' in options_json (known: chat_template", 0) == 0,
          "a struct field in the options JSON: " + struct_name);
    check(options_refusal(R"("nope": 1)").find("'nope'") != std::string::npos, "an unknown key is named");
    check(refusal([] { (void)EngineConfig::from_c(model_params(), "[1]"); }).rfind("options_json must be a JSON object", 0) == 0,
          "options that are not an object");
    check(refusal([] { (void)EngineConfig::from_c(model_params(), "{"); }).rfind("options_json is not valid JSON", 0) == 0,
          "options that do not parse");
    check(fields_refusal(R"("nope": 1)").rfind("unknown engine option 'nope' (known: model_path", 0) == 0,
          "the parser names an unknown field");
    const EngineConfig c = EngineConfig::from_c(
        model_params(), R"({"num_threads": null, "kv_cache_dtype": "float32", "structured_compile_timeout_ms": 250})");
    check(c.num_threads == 0 && c.compile_budget.timeout_ms == 250, "null is the key left out");
    if (std::getenv("VLLM_CPP_KV_CACHE_DTYPE") == nullptr) check(c.kv_dtype == KvDtype::F32, "kv_cache_dtype is read");
    check(EngineConfig::from_c(model_params(), "").num_threads == 0, "\"\": no options");
}

// Each environment override wins over its option, which is still checked;
// VLLM_CPP_ENABLE_JUMP_FORWARD over the struct's field, with its upstream alias.
void test_environment_overrides() {
    setenv("VLLM_CPP_NUM_THREADS", "3", 1);
    check(EngineConfig::from_c(model_params(), R"({"num_threads": 2})").num_threads == 0,
          "VLLM_CPP_NUM_THREADS wins over num_threads");
    check(options_refusal(R"("num_threads": 0)").find("num_threads") != std::string::npos, "and the option is checked");
    unsetenv("VLLM_CPP_NUM_THREADS");
    check(EngineConfig::from_c(model_params(), R"({"num_threads": 2})").num_threads == 2, "num_threads is read");

    unsetenv("VLLM_CPP_ENABLE_JUMP_FORWARD");
    vllm_model_params p = model_params();
    p.enable_jump_forward = 1;
    check(EngineConfig::from_c(p).jump_forward, "enable_jump_forward 1: on");
    setenv("VT_ENABLE_JUMP_FORWARD", "off", 1);
    check(!EngineConfig::from_c(p).jump_forward, "VT_ENABLE_JUMP_FORWARD, the upstream alias, overrides");
    setenv("VLLM_CPP_ENABLE_JUMP_FORWARD", "1", 1);
    p.enable_jump_forward = 2;
    check(EngineConfig::from_c(p).jump_forward, "VLLM_CPP_ENABLE_JUMP_FORWARD wins over the alias and the field");
    p.enable_jump_forward = 5;
    check(struct_refusal([](vllm_model_params& q) { q.enable_jump_forward = 5; }).find("enable_jump_forward") == 1,
          "a field out of range is refused even when the environment decides");
    unsetenv("VLLM_CPP_ENABLE_JUMP_FORWARD");
    unsetenv("VT_ENABLE_JUMP_FORWARD");
}

}  // namespace

int main() {
    test_struct_fields_read_like_json();
    test_options_read_like_fields();
    test_struct_conventions();
    test_options_json();
    test_environment_overrides();
    return vllm_test::report();
}
