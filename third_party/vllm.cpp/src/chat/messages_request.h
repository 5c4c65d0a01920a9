// Anthropic's Messages API request (/v1/messages and
// /v1/messages/count_tokens), validated and translated into the OpenAI chat
// request the chat road runs (chat_service.h): one generation path, whose
// template rendering, tool parsers, reasoning parser and constraints the
// Messages API shares with chat.
//
// Translation (vLLM's, field by field):
// - `system` (a string or text blocks) -> a system message first;
// - `messages`: user / assistant turns whose content is a string or blocks:
//   text; an assistant's tool_use {id, name, input} -> a tool call, its
//   thinking {thinking} -> reasoning_content; a user's tool_result
//   {tool_use_id, content, is_error} -> a "tool" message (before the turn's
//   text, as Anthropic orders them), which must answer a tool_use of an
//   earlier assistant turn. A last assistant turn is a prefill: the answer
//   continues it (continue_final_message);
// - `tools` {name, description, input_schema} -> function tools;
//   `tool_choice` auto / any / tool {name} / none -> "auto" / "required" /
//   the named function / "none";
// - `stop_sequences` -> stop, `max_tokens` (required for /v1/messages),
//   temperature, top_p, top_k as they are; `thinking` enabled / disabled
//   -> chat_template_kwargs.enable_thinking; `metadata` is accepted.
// What the engine cannot do is refused, naming the block or tool: images,
// documents and other non-text blocks, server tools (a `type` other than
// "custom"), redacted thinking. Fields it does not know are ignored (the C
// ABI's rule; the HTTP server refuses those Anthropic does not document).
// Errors: INVALID_ARGUMENT naming the field, e.g. "'messages[1].content[0]
// .type' 'image' is not supported: the engine reads text only".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace vllm::chat {

struct MessagesRequest {
    std::string chat_request_json;  // the OpenAI chat request it translates to
    bool stream = false;
    std::vector<std::string> stop_sequences;  // reported back as stop_sequence when one ends the output
};

// `count_tokens`: a /v1/messages/count_tokens body (no max_tokens, no
// sampling; only the prompt matters).
MessagesRequest translate_messages_request(std::string_view request_json, bool count_tokens = false);

}  // namespace vllm::chat
