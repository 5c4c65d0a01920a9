// jinja2's tests: `x is defined`, `x is string`, `x is equalto y`, ...
#pragma once
#include <string_view>

#include "chat/jinja/ast.h"

namespace vllm::chat::jinja {

// nullptr when jinja2 has no such test (or this engine does not implement it).
TestFn find_test(std::string_view name);

}  // namespace vllm::chat::jinja
