// The prompt text of a chat request, as vLLM renders it before tokenizing:
// the model's chat template (or the plain fallback of a model without one)
// over the request's messages, tools, add_generation_prompt and
// chat_template_kwargs.
//
// continue_final_message (the client writes the start of the assistant's
// answer and the model continues it) follows transformers: the rendered
// text is cut right after the final message's content, so that the
// template's end-of-turn markup after it is dropped.
#pragma once
#include <string>
#include <string_view>

#include "chat/chat_request.h"
#include "chat/chat_template.h"

namespace vllm::chat {

// chat_template: nullptr when the model has none. Template errors are
// INVALID_ARGUMENT (chat_template.h); so is continue_final_message when the
// final message has no text content or its text is not in the rendered
// prompt.
std::string render_chat_prompt(const ChatRequest& request, const ChatTemplate* chat_template);

// transformers' cut for continue_final_message: `rendered` up to the last
// occurrence of the final message's content (compared without surrounding
// whitespace; the content's trailing whitespace is kept when the template
// kept it).
std::string cut_after_final_message(const std::string& rendered, std::string_view final_content);

}  // namespace vllm::chat
