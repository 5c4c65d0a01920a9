#include "chat/completion_request.h"

#include <string>

#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

using json::field;
using json::read_bool;
using json::read_int32_in;
using json::read_integer;
using json::wrong_type;

constexpr int32_t kDefaultMaxTokens = 16;  // OpenAI's and vLLM's for completions

[[noreturn]] void refuse_prompt_shape(const char* key) {
    throw_invalid_argument(std::string("'") + key +
                           "' must be a string, a list of strings, a list of token ids or a list of token "
                           "id lists (non-empty)");
}

bool is_token_list(const json::Value& v) {
    if (!v.is_array() || v.items().empty()) return false;
    for (const json::Value& item : v.items())
        if (!item.is_int()) return false;
    return true;
}

CompletionPrompt read_one_prompt(const json::Value& v, const std::string& name) {
    CompletionPrompt prompt;
    if (v.is_string()) {
        prompt.is_text = true;
        prompt.text = v.as_string();
        if (prompt.text.find('\0') != std::string::npos)
            throw_invalid_argument("'" + name + "' contains a NUL character");
        return prompt;
    }
    prompt.ids.reserve(v.items().size());
    for (size_t i = 0; i < v.items().size(); ++i) {
        const int64_t id = read_integer(v.items()[i], name + "[" + std::to_string(i) + "]");
        // Ids outside the vocabulary are refused at submission, in the engine's words.
        if (id < INT32_MIN || id > INT32_MAX)
            throw_invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
        prompt.ids.push_back(static_cast<int32_t>(id));
    }
    return prompt;
}

}  // namespace

std::vector<CompletionPrompt> read_prompt_inputs(const json::Value& body, const char* key) {
    const json::Value* prompt = field(body, key);
    if (prompt == nullptr) throw_invalid_argument(std::string("'") + key + "' is required");
    if (prompt->is_string() || is_token_list(*prompt)) return {read_one_prompt(*prompt, key)};
    if (!prompt->is_array() || prompt->items().empty()) refuse_prompt_shape(key);
    std::vector<CompletionPrompt> prompts;
    for (size_t i = 0; i < prompt->items().size(); ++i) {
        const json::Value& item = prompt->items()[i];
        if (!item.is_string() && !is_token_list(item)) refuse_prompt_shape(key);
        prompts.push_back(read_one_prompt(item, std::string(key) + "[" + std::to_string(i) + "]"));
    }
    return prompts;
}

namespace {

// max_tokens 0 asks for echo without generation: one token runs (for the
// prompt's logprobs), so the sampling parser, which wants at least 1, reads 1.
bool read_echo_only(const json::Value& body, bool echo) {
    const json::Value* v = field(body, "max_tokens");
    if (v == nullptr || !v->is_int() || v->as_int() != 0) return false;
    if (!echo) throw_invalid_argument("'max_tokens' must be at least 1 (0 only with echo) (got 0)");
    return true;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view request_json) {
    const json::Value body = json::parse(request_json);
    if (!body.is_object()) wrong_type("request", "a JSON object", body);
    CompletionRequest r;
    r.prompts = read_prompt_inputs(body, "prompt");
    if (const json::Value* v = field(body, "echo")) r.echo = read_bool(*v, "echo");
    r.echo_only = read_echo_only(body, r.echo);
    r.sampling.max_tokens = kDefaultMaxTokens;
    if (r.echo_only) {
        json::Value one = body;
        one.set("max_tokens", static_cast<int64_t>(1));
        parse_openai_fields(one, r);
    } else {
        parse_openai_fields(body, r);
    }
    if (const json::Value* v = field(body, "best_of")) {
        const int32_t best_of = read_int32_in(*v, "best_of", 1, kMaxChoices, "between 1 and 128");
        if (best_of != r.n) throw_invalid_argument("'best_of' other than 'n' is not supported");
    }
    if (field(body, "suffix") != nullptr) throw_invalid_argument("'suffix' is not supported");
    if (const json::Value* v = field(body, "logprobs"))
        r.logprobs = read_int32_in(*v, "logprobs", 0, kMaxLogprobs, "between 0 and 20");
    r.sampling.logprobs = r.logprobs;
    r.prompt_logprobs = r.sampling.prompt_logprobs >= 0;
    // vLLM's rule: an echoed prompt's logprobs come with the outputs'.
    if (!r.prompt_logprobs && r.echo && r.logprobs >= 0) r.sampling.prompt_logprobs = r.logprobs;
    return r;
}

}  // namespace vllm::chat
