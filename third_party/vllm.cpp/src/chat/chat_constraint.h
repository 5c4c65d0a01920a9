// The structured-output constraint a chat request puts on its answer.
//
//   response_format json_object   any JSON object
//   response_format json_schema   its `schema` (any JSON object without one)
//   tool_choice named function    that function's arguments: one JSON object
//                                 valid under its `parameters` ({} without)
//   tool_choice "required"        vLLM's format for it, a non-empty JSON array
//                                 of calls of the offered tools, each
//                                 {"name": <tool>, "parameters": <its arguments>}
//
// forced_tool_parser.h reads the forced calls back into tool_calls. A schema
// the compiler refuses is INVALID_ARGUMENT naming the request field it came
// from; so is asking for two constraints at once (response_format with a
// forced tool call).
#pragma once
#include <memory>

#include "chat/chat_request.h"

namespace vllm::structured {
class Grammar;
class GrammarCompiler;
}

namespace vllm::chat {

// The constraint of the fields every endpoint shares (openai_request.h):
// response_format or one guided / structured_outputs field (giving both is
// INVALID_ARGUMENT). nullptr when they leave the output free.
std::shared_ptr<const structured::Grammar> format_constraint(const OpenAIRequest& request,
                                                             const structured::GrammarCompiler* compiler);

// Chat's: format_constraint, or a forced tool call's. nullptr when the
// request leaves the output free. Compiled through
// `compiler` (the engine's; nullptr: on this thread).
std::shared_ptr<const structured::Grammar> chat_output_constraint(const ChatRequest& request,
                                                                  const structured::GrammarCompiler* compiler);

}  // namespace vllm::chat
