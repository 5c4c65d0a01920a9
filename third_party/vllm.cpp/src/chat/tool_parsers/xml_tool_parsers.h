// GLM-4.5's tool calls: each argument written as bare text between tags,
// typed by the request's tool schema (typed_arguments.h; Qwen3-Coder's
// dialect is qwen3_coder_tool_parser.h).
//
// glm45 (GLM-4.5 / 4.6 / 4.7):
//   <tool_call>get_weather
//   <arg_key>city</arg_key>
//   <arg_value>Beijing</arg_value>
//   </tool_call>
// The name ends at the first newline or <arg_key>; keys and values are
// trimmed; a block must close.
#pragma once
#include <memory>

#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

std::unique_ptr<ToolParser> make_glm45_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools);

}  // namespace vllm::chat
