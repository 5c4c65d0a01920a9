// Qwen3-Coder's tool calls (and the templates of Qwen3.5 / 3.6), each
// argument bare text typed by the request's tool schema (typed_arguments.h):
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
// is a call too.
//
// Calls stream as vLLM streams them: a function is committed once its
// first parameter is whole (or it closes without any): its id and name
// with '{' and that member, then each further member (', "days": 3') as it
// completes, then '}' when the function ends. A block that ends before any
// function in it was committed is content as written (a call cut short by
// the length limit is not sent half-written); a committed function cut
// short keeps the parameters that completed, and markup that breaks after
// a commit is dropped.
#pragma once
#include <memory>

#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools);

}  // namespace vllm::chat
