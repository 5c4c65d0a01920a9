// jinja2's built-in filters that chat templates use (plus transformers'
// tojson), with jinja2's semantics for Undefined and Python's for values.
#pragma once
#include <string_view>

#include "chat/jinja/ast.h"

namespace vllm::chat::jinja {

// nullptr when jinja2 has no such filter (or this engine does not implement it).
FilterFn find_filter(std::string_view name);

}  // namespace vllm::chat::jinja
