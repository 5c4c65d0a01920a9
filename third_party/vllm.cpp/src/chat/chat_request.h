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

#include "chat/openai_request.h"
#include "util/json.h"

namespace vllm::chat {

// "none", "auto", "required", or {"type": "function", "function": {"name": ...}}.
enum class ToolChoice { None, Auto, Required, Named };

// The shared fields (model, sampling, n, priority, stream, response_format,
// ...) are openai_request.h's; chat's sampling default is max_tokens 0 (up
// to max_model_len); logprobs and the output constraint are set from the
// fields below when the request is prepared.
struct ChatRequest : OpenAIRequest {
    json::Value messages;    // array of normalized message objects (see above)
    json::Value tools;       // array of {"type":"function","function":{...}}, or null
    ToolChoice tool_choice = ToolChoice::None;  // default: auto with tools, none without
    std::string tool_choice_name;               // ToolChoice::Named: a function in `tools`
    bool legacy_functions = false;  // given as `functions`: answered with function_call (chat_response.h)

    bool logprobs = false;
    int32_t top_logprobs = 0;      // 0..20, needs logprobs
    // vLLM's thinking_token_budget: at most this many reasoning tokens
    // before the engine ends the section (>= 0; -1: no budget). Needs a
    // reasoning parser (chat_service.h).
    int32_t thinking_token_budget = -1;
    // The messages' {"type": "image"} parts (issue 46): each needs an image
    // beside the request (vllm_chat_submit_pull_with_images).
    size_t num_images = 0;

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
