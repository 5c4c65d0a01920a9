#include "sample/request_options.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "util/error.h"
#include "util/json_fields.h"

namespace vllm {

namespace {

constexpr const char* kKeys[] = {"logit_bias",          "allowed_token_ids", "stop_token_ids",
                                 "include_stop_str_in_output", "skip_special_tokens", "prompt_logprobs",
                                 "truncate_prompt_tokens", "bad_words"};

std::vector<int32_t> read_stop_token_ids(const json::Value& v) {
    std::vector<int32_t> ids = read_token_ids(v, "stop_token_ids");
    // A set, as vLLM keeps it: a repeat is harmless.
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

bool read_flag(const json::Value& object, const char* key, bool absent) {
    const json::Value* v = json::field(object, key);
    if (v == nullptr) return absent;
    if (!v->is_bool()) json::wrong_type(key, "a boolean", *v);
    return v->as_bool();
}

}  // namespace

RequestOptions RequestOptions::from_json(const json::Value& object) {
    RequestOptions o;
    o.logit_adjustments = LogitAdjustments::from_json(object);
    if (const json::Value* v = json::field(object, "stop_token_ids")) o.stop_token_ids = read_stop_token_ids(*v);
    o.include_stop_str_in_output = read_flag(object, "include_stop_str_in_output", false);
    o.skip_special_tokens = read_flag(object, "skip_special_tokens", true);
    if (const json::Value* v = json::field(object, "prompt_logprobs")) {
        const int64_t k = json::read_integer(*v, "prompt_logprobs");
        if (k < 0 || k > 20) json::out_of_range("prompt_logprobs", "between 0 and 20", double(k));
        o.prompt_logprobs = static_cast<int32_t>(k);
    }
    if (const json::Value* v = json::field(object, "truncate_prompt_tokens")) {
        const int64_t k = json::read_integer(*v, "truncate_prompt_tokens");
        if (k == -1)
            throw_invalid_argument("'truncate_prompt_tokens' -1 (the model's length) is not supported: give the "
                                   "number of tokens to keep");
        if (k < 1 || k > std::numeric_limits<int32_t>::max())
            json::out_of_range("truncate_prompt_tokens", "a positive number of tokens", double(k));
        o.truncate_prompt_tokens = static_cast<int32_t>(k);
    }
    if (const json::Value* v = json::field(object, "bad_words")) {
        if (!v->is_array()) json::wrong_type("bad_words", "an array of strings", *v);
        for (size_t i = 0; i < v->items().size(); ++i) {
            const std::string name = "bad_words[" + std::to_string(i) + "]";
            const json::Value& word = v->items()[i];
            if (!word.is_string()) json::wrong_type(name, "a string", word);
            if (word.as_string().find_first_not_of(" ") == std::string::npos)
                throw_invalid_argument("'" + name + "' must not be empty or blank");
            o.bad_words.push_back(word.as_string());
        }
    }
    return o;
}

RequestOptions RequestOptions::parse(std::string_view options_json) {
    if (options_json.empty()) return {};
    const json::Value options = json::parse_object(options_json, "options_json");
    for (const auto& member : options.members())
        if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return member.first == k; })) {
            std::string known;
            for (const char* k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k);
            throw_invalid_argument("options_json: unknown sampling option '" + member.first + "' (known: " + known +
                                   ")");
        }
    return from_json(options);
}

void RequestOptions::apply_to(SamplingConfig& config) const {
    config.logit_adjustments =
        logit_adjustments.empty() ? nullptr : std::make_shared<const LogitAdjustments>(logit_adjustments);
    config.stop_token_ids = stop_token_ids;
    config.include_stop_str_in_output = include_stop_str_in_output;
    config.skip_special_tokens = skip_special_tokens;
    config.truncate_prompt_tokens = truncate_prompt_tokens;
    config.bad_words = bad_words;
    config.prompt_logprobs = prompt_logprobs;
}

}  // namespace vllm
