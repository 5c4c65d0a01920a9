// Argument values written as bare text (Qwen3-Coder's <parameter=city>Paris
// </parameter>, GLM-4.5's <arg_value>3</arg_value>) turned into JSON values
// by the type the request's tool schema gives the parameter, as vLLM's
// qwen3_coder and glm45 parsers convert them.
#pragma once
#include <string_view>

#include "util/json.h"

namespace vllm::chat {

// The schema of parameter `param` of function `function` in the request's
// `tools` (an array of {"type":"function","function":{...}}, or null);
// nullptr when the tool or the parameter is not declared.
const json::Value* tool_parameter_schema(const json::Value& tools, std::string_view function, std::string_view param);

// qwen3_coder: "null" (any case) is null; an undeclared parameter stays a
// string; by the declared "type": string-like types stay strings, int*
// types read as Python's int(), num*/float* as float() (an integral value as
// an integer), boolean as lower-case "true", object/array as JSON and then
// as a Python literal; any other type as a Python literal. A value that
// does not read as its type stays the string it was.
json::Value qwen3_coder_argument(std::string_view value, const json::Value* schema);

// glm45: a parameter declared "string" stays a string; anything else is
// JSON, else JSON once its escapes are undone, else a Python literal, else
// the string.
json::Value glm45_argument(std::string_view value, const json::Value* schema);

}  // namespace vllm::chat
