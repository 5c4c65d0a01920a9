// The OpenAI chat protocol as the engine speaks it: the request
// (chat_request.h), the response and stream chunks (chat_response.h), and
// the ids they carry.
//
// Ids: "chatcmpl-" + 32 random alphanumerics for a chat completion, "cmpl-"
// + 32 for a (legacy) completion; tool calls get
// "call_" + 24 random alphanumerics (OpenAI's shape), except the mistral
// dialect, whose templates require exactly 9 alphanumerics (mistral_common's
// rule, which vLLM follows too).
#pragma once
#include <cstddef>
#include <string>

#include "chat/chat_request.h"
#include "chat/chat_response.h"

namespace vllm::chat {

// n characters from [A-Za-z0-9], from a per-thread generator seeded by the OS.
std::string random_alphanumeric(size_t n);

std::string make_chat_completion_id();  // "chatcmpl-..."
std::string make_completion_id();       // "cmpl-..." (/v1/completions)
std::string make_tool_call_id();        // "call_..."
std::string make_mistral_tool_call_id();  // 9 alphanumerics

}  // namespace vllm::chat
