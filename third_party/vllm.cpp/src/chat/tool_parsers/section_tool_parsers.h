// The dialects that gather their calls in one section of special tokens,
// each call's arguments as JSON:
//
// deepseek_v3 (DeepSeek-V3, R1):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//   ```json
//   {"city": "Paris"}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// deepseek_v31 (DeepSeek-V3.1):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// kimi_k2 (Kimi-K2; the call's id is the model's own "functions.NAME:INDEX",
// as vLLM sends it, since Kimi's template matches tool results by it):
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>
//
// Calls are released when the section closes (or, with every call in it
// closed, when the output ends); a section holding anything but whole calls
// is content as written.
#pragma once
#include <memory>

#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

std::unique_ptr<ToolParser> make_deepseek_v3_tool_parser(ToolParser::IdGenerator ids);
std::unique_ptr<ToolParser> make_deepseek_v31_tool_parser(ToolParser::IdGenerator ids);
std::unique_ptr<ToolParser> make_kimi_k2_tool_parser(ToolParser::IdGenerator ids);

}  // namespace vllm::chat
