// The sampling fields' one parser (sample/sampling_fields.h): each field's
// type, limits and error text live here and nowhere else.
#include "sample/sampling_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "util/error.h"
#include "util/json_fields.h"

namespace vllm {

namespace {

using json::field;
using json::out_of_range;
using json::read_bool;
using json::read_int32_in;
using json::read_integer;
using json::read_number;
using json::wrong_type;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

constexpr const char* kFields[] = {
    "temperature",       "top_p",         "top_k",          "min_p",
    "max_tokens",        "max_completion_tokens",           "seed",
    "presence_penalty",  "frequency_penalty",               "repetition_penalty",
    "min_tokens",        "ignore_eos",    "stop",           "logit_bias",
    "allowed_token_ids", "stop_token_ids", "include_stop_str_in_output",
    "skip_special_tokens", "prompt_logprobs", "truncate_prompt_tokens", "bad_words",
    "lora_int_id"};

// A number within `ok` (NaN and infinities never are), as the float the
// engine keeps (a value past a float's range is refused, not made infinite).
template <typename InRange>
void read_real(const json::Value& object, const char* name, const char* range, InRange ok, float& target) {
    const json::Value* v = field(object, name);
    if (v == nullptr) return;
    const double d = read_number(*v, name);
    if (!(std::isfinite(d) && ok(d))) out_of_range(name, range, d);
    if (std::fabs(d) > std::numeric_limits<float>::max()) out_of_range(name, "at most 3.4e38 in size", d);
    target = static_cast<float>(d);
}

std::vector<std::string> read_stop(const json::Value& stop) {
    std::vector<std::string> out;
    if (stop.is_string()) {
        out.push_back(stop.as_string());
    } else if (stop.is_array()) {
        for (size_t i = 0; i < stop.items().size(); ++i) {
            const json::Value& s = stop.items()[i];
            if (!s.is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", s);
            out.push_back(s.as_string());
        }
    } else {
        wrong_type("stop", "a string or an array of strings", stop);
    }
    for (const std::string& s : out) {
        if (s.empty()) throw_invalid_argument("'stop' strings must not be empty");
        // As vllm_sampling_params carries them: C strings.
        if (s.find('\0') != std::string::npos) throw_invalid_argument("'stop' strings must not contain NUL");
    }
    return out;
}

std::vector<int32_t> read_stop_token_ids(const json::Value& v) {
    std::vector<int32_t> ids = read_token_ids(v, "stop_token_ids");
    // A set, as vLLM keeps it: a repeat is harmless.
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

std::vector<std::string> read_bad_words(const json::Value& v) {
    if (!v.is_array()) wrong_type("bad_words", "an array of strings", v);
    std::vector<std::string> words;
    for (size_t i = 0; i < v.items().size(); ++i) {
        const std::string name = "bad_words[" + std::to_string(i) + "]";
        const json::Value& word = v.items()[i];
        if (!word.is_string()) wrong_type(name, "a string", word);
        if (word.as_string().find_first_not_of(" ") == std::string::npos)
            throw_invalid_argument("'" + name + "' must not be empty or blank");
        if (word.as_string().find('\0') != std::string::npos) throw_invalid_argument("'" + name + "' must not contain NUL");
        words.push_back(word.as_string());
    }
    return words;
}

int32_t read_truncate_prompt_tokens(const json::Value& v) {
    const int64_t k = read_integer(v, "truncate_prompt_tokens");
    if (k == -1)
        throw_invalid_argument("'truncate_prompt_tokens' -1 (the model's length) is not supported: give the "
                               "number of tokens to keep");
    if (k < 1 || k > kInt32Max) out_of_range("truncate_prompt_tokens", "a positive number of tokens", double(k));
    return static_cast<int32_t>(k);
}

// temperature .. repetition_penalty: the numbers that shape the distribution.
void read_distribution(const json::Value& o, SamplingConfig& c) {
    read_real(o, "temperature", ">= 0", [](double t) { return t >= 0; }, c.temperature);
    read_real(o, "top_p", "in (0, 1]", [](double p) { return p > 0 && p <= 1; }, c.top_p);
    if (const json::Value* v = field(o, "top_k")) {
        const int32_t k = read_int32_in(*v, "top_k", -1, kInt32Max, "-1, 0 (all tokens) or between 1 and 2147483647");
        c.top_k = k < 0 ? 0 : k;
    }
    read_real(o, "min_p", "in [0, 1]", [](double p) { return p >= 0 && p <= 1; }, c.min_p);
    const auto penalty_range = [](double p) { return p >= -2 && p <= 2; };
    read_real(o, "presence_penalty", "in [-2, 2]", penalty_range, c.presence_penalty);
    read_real(o, "frequency_penalty", "in [-2, 2]", penalty_range, c.frequency_penalty);
    read_real(o, "repetition_penalty", "> 0", [](double p) { return p > 0; }, c.repetition_penalty);
}

// max_tokens .. stop: where the output ends.
void read_length(const json::Value& o, SamplingConfig& c) {
    // max_completion_tokens is chat's current name; max_tokens the older one.
    for (const char* key : {"max_tokens", "max_completion_tokens"})
        if (const json::Value* v = field(o, key))
            c.max_tokens = read_int32_in(*v, key, 1, kInt32Max, "between 1 and 2147483647");
    if (const json::Value* v = field(o, "min_tokens"))
        c.min_tokens = read_int32_in(*v, "min_tokens", 0, kInt32Max, "between 0 and 2147483647");
    if (c.max_tokens > 0 && c.min_tokens > c.max_tokens)
        throw_invalid_argument("'min_tokens' (" + std::to_string(c.min_tokens) + ") must not exceed max_tokens (" +
                               std::to_string(c.max_tokens) + ")");
    if (const json::Value* v = field(o, "ignore_eos")) c.ignore_eos = read_bool(*v, "ignore_eos");
    if (const json::Value* v = field(o, "seed")) {
        // Any 64-bit integer (vLLM's range); a negative one wraps, as the C struct's uint64 seed.
        c.seed = static_cast<uint64_t>(read_integer(*v, "seed"));
        c.has_seed = true;
    }
    if (const json::Value* v = field(o, "stop")) c.stop = read_stop(*v);
}

// logit_bias .. bad_words: vLLM's per-request extras.
void read_extras(const json::Value& o, SamplingConfig& c) {
    if (field(o, "logit_bias") != nullptr || field(o, "allowed_token_ids") != nullptr) {
        LogitAdjustments adjustments = LogitAdjustments::from_json(o);
        c.logit_adjustments =
            adjustments.empty() ? nullptr : std::make_shared<const LogitAdjustments>(std::move(adjustments));
    }
    if (const json::Value* v = field(o, "stop_token_ids")) c.stop_token_ids = read_stop_token_ids(*v);
    if (const json::Value* v = field(o, "include_stop_str_in_output"))
        c.include_stop_str_in_output = read_bool(*v, "include_stop_str_in_output");
    if (const json::Value* v = field(o, "skip_special_tokens"))
        c.skip_special_tokens = read_bool(*v, "skip_special_tokens");
    if (const json::Value* v = field(o, "prompt_logprobs"))
        c.prompt_logprobs = read_int32_in(*v, "prompt_logprobs", 0, kMaxLogprobs, "between 0 and 20");
    if (const json::Value* v = field(o, "truncate_prompt_tokens"))
        c.truncate_prompt_tokens = read_truncate_prompt_tokens(*v);
    if (const json::Value* v = field(o, "bad_words")) c.bad_words = read_bad_words(*v);
    if (const json::Value* v = field(o, "lora_int_id"))
        c.lora_int_id = read_int32_in(*v, "lora_int_id", 0, static_cast<int32_t>(kInt32Max), "0 (the base model) or a registered adapter's id");
}

}  // namespace

void read_sampling_fields(const json::Value& object, SamplingConfig& config) {
    read_distribution(object, config);
    read_length(object, config);
    read_extras(object, config);
}

void read_sampling_options(std::string_view options_json, SamplingConfig& config) {
    if (options_json.empty()) return;
    const json::Value options = json::parse_object(options_json, "options_json");
    for (const auto& member : options.members())
        if (std::none_of(std::begin(kFields), std::end(kFields), [&](const char* k) { return member.first == k; })) {
            std::string known;
            for (const char* k : kFields) known += (known.empty() ? "" : ", ") + std::string(k);
            throw_invalid_argument("options_json: unknown sampling option '" + member.first + "' (known: " + known +
                                   ")");
        }
    read_sampling_fields(options, config);
}

}  // namespace vllm
