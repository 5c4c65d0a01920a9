// An OpenAI /v1/chat/completions request, validated and typed.
//
// parse_chat_request() checks every field it knows and ignores the others
// (the C ABI's rule; the HTTP server refuses the fields OpenAI does not
// document). OpenAI's legacy `functions` and `function_call` are read as the
// `tools` and `tool_choice` they became. A wrong type or an out-of-range value is INVALID_ARGUMENT
// naming the field, e.g. "'temperature' must be a number (got string)" or
// "'messages[1].role' must be one of system, developer, user, assistant,
// tool (got 'bot')". tool_choice "required" / a named function and
// response_format json_object / json_schema are read here and turned into an
// output constraint by chat_constraint.h.
//
// The messages come back normalized for chat templates, as vLLM hands them
// to transformers' apply_chat_template (normalize_messages below).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/sampling_config.h"
#include "util/json.h"

namespace vllm::chat {

// "none", "auto", "required", or {"type": "function", "function": {"name": ...}}.
enum class ToolChoice { None, Auto, Required, Named };

// response_format: "text" (no constraint), "json_object", or "json_schema"
// with its schema (JSON text; "" when the request gave none: any object).
struct ResponseFormat {
    enum class Type { Text, JsonObject, JsonSchema };
    Type type = Type::Text;
    std::string schema;
};

// vLLM's structured_outputs ({"json" | "regex" | "choice" | "grammar" |
// "json_object": ...}) or its older guided_json / guided_regex /
// guided_choice / guided_grammar fields: one constraint, named by the field
// it came from (for errors).
struct GuidedOutput {
    enum class Kind { None, JsonSchema, JsonObject, Regex, Choice, Grammar };
    Kind kind = Kind::None;
    std::string field;                 // e.g. "guided_regex", "structured_outputs.json"
    std::string text;                  // the schema (JSON text), pattern or grammar
    std::vector<std::string> choices;  // Kind::Choice
};

// A SamplingConfig with chat's defaults: max_tokens 0 (up to max_model_len).
SamplingConfig chat_sampling_defaults();

struct ChatRequest {
    std::string model;       // "" when absent
    json::Value messages;    // array of normalized message objects (see above)
    json::Value tools;       // array of {"type":"function","function":{...}}, or null
    ToolChoice tool_choice = ToolChoice::None;  // default: auto with tools, none without
    std::string tool_choice_name;               // ToolChoice::Named: a function in `tools`
    bool legacy_functions = false;  // given as `functions`: answered with function_call (chat_response.h)
    ResponseFormat response_format;
    GuidedOutput guided;  // at most one of it and response_format constrains

    // The sampling fields, read by the engine's one parser of them
    // (sample/sampling_fields.h), OpenAI's defaults where a field is absent
    // (max_tokens 0: up to max_model_len); logprobs and the output
    // constraint are set from the fields below when the request is prepared.
    SamplingConfig sampling = chat_sampling_defaults();

    int32_t n = 1;                 // choices sharing the prompt, 1..128
    bool logprobs = false;
    int32_t top_logprobs = 0;      // 0..20, needs logprobs
    int32_t priority = 0;          // lower runs first under the "priority" policy
    bool stream = false;
    bool include_usage = false;    // stream_options.include_usage
    bool return_token_ids = false;  // vLLM's: each choice's token ids, and the prompt's
    bool return_tokens_as_token_ids = false;  // vLLM's: logprobs name tokens "token_id:<id>"

    // The request's own chat template (vLLM's `chat_template`), used instead
    // of the model's; "" : the model's. A server decides whether to trust it.
    std::string chat_template;
    json::Value chat_template_kwargs = json::Value::object();  // extra template variables
    bool add_generation_prompt = true;
    bool continue_final_message = false;

    // chat_template_kwargs.enable_thinking, when it is a boolean.
    std::optional<bool> enable_thinking() const;
};

ChatRequest parse_chat_request(std::string_view request_json);

// What vLLM does to OpenAI messages before a template sees them: each
// message becomes {role, content} plus the fields templates read
// (assistant tool_calls and reasoning_content / reasoning, a tool message's
// tool_call_id, name); null fields the SDKs send (refusal, audio, ...) are
// dropped. content is a string: null or absent (an assistant turn that only
// calls tools, a tool result without text) is "", an array of text parts
// ("text", "input_text", "output_text", "refusal", plain strings) is joined
// with "\n"; other part types are refused (the engine is text-only).
// tool_calls[].function.arguments, a JSON string on the wire, becomes its
// value (templates iterate `arguments|items`); an object is kept; null or ""
// is {}. Errors: INVALID_ARGUMENT naming the field ("'messages[2].role' ...").
json::Value normalize_messages(const json::Value& messages);

// The position in `tools` (as parse_chat_request validated them) of the
// function named `name`; -1 when there is none.
int tool_index(const json::Value& tools, const std::string& name);

}  // namespace vllm::chat
