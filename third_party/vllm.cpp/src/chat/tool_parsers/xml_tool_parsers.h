// The dialects that write each argument as bare text between tags, typed
// by the request's tool schema (typed_arguments.h):
//
// qwen3_coder (Qwen3-Coder, and the templates of Qwen3.5 / 3.6):
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   </function>
//   </tool_call>
// One newline either side of a value is the markup's and goes; a missing
// </parameter> ends at the next parameter or the function's end, as vLLM's
// regex reads it. A bare <function=...>...</function> without <tool_call>
// is a call too. When the output ends inside a block, every function in it
// must have closed, or the block is content (a call cut short by the
// length limit is not sent half-written).
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

std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools);
std::unique_ptr<ToolParser> make_glm45_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools);

}  // namespace vllm::chat
