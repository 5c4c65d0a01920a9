// An OpenAI Responses API request (POST /v1/responses), read into the chat
// request it runs as: the Responses API has no generation path of its own,
// it is a different wire shape over the chat road (chat_service.h).
//
// What is read: `input` as a string (one user message) or a list of items
// (messages with string or input_text / output_text content, `function_call`,
// `function_call_output`, `reasoning`), `instructions` (a system message
// first; not carried over from a previous response, as OpenAI does),
// function `tools` and `tool_choice`, `text.format` (text, json_object,
// json_schema) as chat's response_format, `max_output_tokens` as
// max_completion_tokens, the sampling fields as chat reads them,
// `reasoning.effort` as chat's reasoning_effort (the chat template's
// variable), `stream`, `store`, `previous_response_id` (a string; the caller resolves
// it and passes that response's conversation as `history`).
// Refused with INVALID_ARGUMENT naming the field: wrong types, unknown item
// types, a function_call_output whose call_id no function_call before it
// made, built-in tools (web_search, file_search, ...), `background: true`,
// `conversation`, `prompt` (stored prompts) and non-text content parts.
// Documented fields with nothing to do here (metadata, user, truncation,
// parallel_tool_calls, include, reasoning.summary, service_tier, ...) are accepted
// and echoed where the response object has them; unknown fields are
// ignored (the C ABI's rule).
#pragma once
#include <string>

#include "util/json.h"

namespace vllm::chat {

struct ResponsesRequest {
    json::Value chat_request;  // the /v1/chat/completions body it runs as
    json::Value input_items;   // `input` as a list of items ({"type":"message",...} for a string)
    json::Value echo;          // the request fields the response object repeats, with their defaults
    bool stream = false;
    bool store = true;
};

// `body`: the request; `history`: the items of the conversation before it
// (a previous response's, see responses_output.h), an array, or null.
ResponsesRequest read_responses_request(const json::Value& body, const json::Value& history);

}  // namespace vllm::chat
