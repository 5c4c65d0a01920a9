// The sampling fields' one parser (sample/sampling_fields.h) without a
// model: each out-of-range or mistyped field gets the same INVALID_ARGUMENT
// text whether it comes in a request body, an options JSON or a
// vllm_sampling_params (SamplingConfig::from_c); absent and null fields keep
// the caller's defaults; the options JSON refuses unknown keys; the struct's
// own conventions (max_tokens <= 0 unbounded, top_k -1, a 64-bit seed) map
// onto the parser's fields unchanged.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "check.h"
#include "refusal.h"
#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json.h"

using namespace vllm;

using vllm_test::refusal;

namespace {

// The refusal of `fields` (JSON members) read from a body object, or as
// the text of an options JSON.
std::string fields_refusal(const std::string& fields, bool as_options) {
    return refusal([&] {
        SamplingConfig c;
        if (as_options) read_sampling_options("{" + fields + "}", c);
        else read_sampling_fields(json::parse("{" + fields + "}"), c);
    });
}

std::string body_refusal(const std::string& fields) { return fields_refusal(fields, false); }
std::string options_refusal(const std::string& fields) { return fields_refusal(fields, true); }

std::string struct_refusal(const std::function<void(vllm_sampling_params&)>& set) {
    return refusal([&] {
        vllm_sampling_params p = vllm_sampling_params_default();
        set(p);
        (void)SamplingConfig::from_c(p);
    });
}

struct Case {
    const char* fields;   // JSON members of a body / options object
    const char* message;  // the one error text
};

// One row per refusal; each is checked through a body and an options JSON.
const Case kCases[] = {
    {R"("temperature": -1)", "'temperature' must be >= 0 (got -1)"},
    {R"("temperature": "hot")", "'temperature' must be a number (got string)"},
    {R"("temperature": 1e308)", "'temperature' must be at most 3.4e38 in size (got 1e+308)"},
    {R"("top_p": 0)", "'top_p' must be in (0, 1] (got 0)"},
    {R"("top_p": 1.5)", "'top_p' must be in (0, 1] (got 1.5)"},
    {R"("top_k": -2)", "'top_k' must be -1, 0 (all tokens) or between 1 and 2147483647 (got -2)"},
    {R"("top_k": 1.5)", "'top_k' must be an integer (got float)"},
    {R"("min_p": 2)", "'min_p' must be in [0, 1] (got 2)"},
    {R"("presence_penalty": 3)", "'presence_penalty' must be in [-2, 2] (got 3)"},
    {R"("frequency_penalty": -2.5)", "'frequency_penalty' must be in [-2, 2] (got -2.5)"},
    {R"("repetition_penalty": 0)", "'repetition_penalty' must be > 0 (got 0)"},
    {R"("max_tokens": 0)", "'max_tokens' must be between 1 and 2147483647 (got 0)"},
    {R"("max_tokens": 3000000000)", "'max_tokens' must be between 1 and 2147483647 (got 3000000000)"},
    {R"("min_tokens": -1)", "'min_tokens' must be between 0 and 2147483647 (got -1)"},
    {R"("min_tokens": 5, "max_tokens": 2)", "'min_tokens' (5) must not exceed max_tokens (2)"},
    {R"("ignore_eos": 1)", "'ignore_eos' must be a boolean (got int)"},
    {R"("seed": "x")", "'seed' must be an integer (got string)"},
    {R"("stop": 5)", "'stop' must be a string or an array of strings (got int)"},
    {R"("stop": ["a", 1])", "'stop[1]' must be a string (got int)"},
    {R"("stop": [""])", "'stop' strings must not be empty"},
    {R"("stop": ["a\u0000b"])", "'stop' strings must not contain NUL"},
    {R"("stop_token_ids": [-1])", "'stop_token_ids[0]' must be a token id (got -1)"},
    {R"("include_stop_str_in_output": "yes")", "'include_stop_str_in_output' must be a boolean (got string)"},
    {R"("skip_special_tokens": 0)", "'skip_special_tokens' must be a boolean (got int)"},
    {R"("prompt_logprobs": 21)", "'prompt_logprobs' must be between 0 and 20 (got 21)"},
    {R"("truncate_prompt_tokens": 0)", "'truncate_prompt_tokens' must be a positive number of tokens (got 0)"},
    {R"("truncate_prompt_tokens": -1)",
     "'truncate_prompt_tokens' -1 (the model's length) is not supported: give the number of tokens to keep"},
    {R"("bad_words": [" "])", "'bad_words[0]' must not be empty or blank"},
    {R"("bad_words": ["\u0000"])", "'bad_words[0]' must not contain NUL"},
    {R"("logit_bias": {"3": 100.5})", "'logit_bias[\"3\"]' must be in [-100, 100] (got 100.5)"},
    {R"("allowed_token_ids": [])", "'allowed_token_ids' must not be empty"},
};

void test_one_text_per_field() {
    for (const Case& c : kCases) {
        check(body_refusal(c.fields) == c.message, std::string("body ") + c.fields + ": " + body_refusal(c.fields));
        check(options_refusal(c.fields) == c.message,
              std::string("options ") + c.fields + ": " + options_refusal(c.fields));
    }
}

// The struct's fields meet the same texts as the same values in JSON.
void test_struct_reads_like_json() {
    const std::pair<std::function<void(vllm_sampling_params&)>, const char*> rows[] = {
        {[](auto& p) { p.temperature = -1; }, R"("temperature": -1)"},
        {[](auto& p) { p.top_p = 1.5f; }, R"("top_p": 1.5)"},
        {[](auto& p) { p.top_p = 0; }, R"("top_p": 0)"},
        {[](auto& p) { p.top_k = -2; }, R"("top_k": -2)"},
        {[](auto& p) { p.min_p = 2; }, R"("min_p": 2)"},
        {[](auto& p) { p.presence_penalty = 3; }, R"("presence_penalty": 3)"},
        {[](auto& p) { p.frequency_penalty = -2.5f; }, R"("frequency_penalty": -2.5)"},
        {[](auto& p) { p.repetition_penalty = 0; }, R"("repetition_penalty": 0)"},
        {[](auto& p) { p.min_tokens = -1; }, R"("min_tokens": -1)"},
        {[](auto& p) { p.min_tokens = 5, p.max_tokens = 2; }, R"("min_tokens": 5, "max_tokens": 2)"},
    };
    for (const auto& [set, fields] : rows)
        check(struct_refusal(set) == body_refusal(fields) && !body_refusal(fields).empty(),
              std::string("struct like ") + fields + ": " + struct_refusal(set));
    static const char* empty[] = {""};
    check(struct_refusal([](auto& p) { p.stop = empty, p.n_stop = 1; }) == body_refusal(R"("stop": [""])"),
          "an empty stop string: the body's text");
    check(struct_refusal([](auto& p) { p.temperature = NAN; }).find("'temperature' must be >= 0") == 0,
          "NaN temperature refused by name");
    check(struct_refusal([](auto& p) { p.top_p = INFINITY; }).find("'top_p' must be in (0, 1]") == 0,
          "infinite top_p refused by name");
    // The struct's own checks stay its own.
    check(struct_refusal([](auto& p) { p.n_stop = 2; }) == "stop is NULL but n_stop is 2", "n_stop without stop");
    check(struct_refusal([](auto& p) { p.structured_json_object = 2; }).find("structured_json_object must be 0 or 1") ==
              0,
          "structured_json_object 2");
}

void test_struct_conventions() {
    vllm_sampling_params p = vllm_sampling_params_default();
    p.max_tokens = -5, p.top_k = -1, p.has_seed = 1, p.seed = std::numeric_limits<uint64_t>::max();
    p.ignore_eos = 1;
    const SamplingConfig c = SamplingConfig::from_c(p);
    check(c.max_tokens == 0, "the struct's max_tokens <= 0: unbounded");
    check(c.top_k == 0, "top_k -1: all tokens (0)");
    check(c.has_seed && c.seed == std::numeric_limits<uint64_t>::max(), "a 64-bit seed kept bit for bit");
    check(c.ignore_eos && c.temperature == 1.0f && c.repetition_penalty == 1.0f, "the rest as given");
    p.has_seed = 0;
    check(!SamplingConfig::from_c(p).has_seed, "has_seed 0: unseeded");
    p.max_tokens = 16;
    check(SamplingConfig::from_c(p).max_tokens == 16, "the default 16");
}

void test_absent_and_null_keep_defaults() {
    SamplingConfig c;
    c.max_tokens = 0;
    read_sampling_fields(json::parse(R"({"temperature": null, "stop": null, "messages": [], "n": 3})"), c);
    check(c.temperature == 1.0f && c.stop.empty() && c.max_tokens == 0, "null and unknown body fields change nothing");
    read_sampling_options(R"({"temperature": 0.25, "seed": -1, "stop": "x", "stop_token_ids": [5, 2, 5]})", c);
    check(c.temperature == 0.25f && c.has_seed && c.seed == std::numeric_limits<uint64_t>::max() &&
              c.stop == std::vector<std::string>{"x"} && c.stop_token_ids == std::vector<int32_t>({2, 5}),
          "options set what they name (a negative seed wraps; stop_token_ids a set)");
    read_sampling_options("", c);
    check(c.temperature == 0.25f, "an empty options text: nothing");
    read_sampling_options(R"({"min_tokens": 4})", c);
    check(c.min_tokens == 4 && c.max_tokens == 0, "min_tokens against an unbounded max_tokens");
}

void test_options_json_refusals() {
    const std::string unknown = refusal([] {
        SamplingConfig c;
        read_sampling_options(R"({"n": 2})", c);
    });
    check(unknown.find("options_json: unknown sampling option 'n' (known: temperature, top_p") == 0 &&
              unknown.find("bad_words, lora_int_id)") != std::string::npos,
          "an unknown option named with the known ones: " + unknown);
    check(refusal([] {
              SamplingConfig c;
              read_sampling_options("[1]", c);
          }).find("options_json must be a JSON object") == 0,
          "options that are not an object");
    check(body_refusal(R"("n": 0, "messages": 1)").empty(), "a body's other fields are not the parser's");
}

}  // namespace

int main() {
    test_one_text_per_field();
    test_struct_reads_like_json();
    test_struct_conventions();
    test_absent_and_null_keep_defaults();
    test_options_json_refusals();
    return report();
}
