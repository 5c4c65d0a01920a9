// The str / dict / list methods a template can call (`s.strip()`,
// `d.items()`, ...), as bound-method values. Methods that would mutate are
// refused as jinja2's immutable sandbox refuses them.
#pragma once
#include <string_view>

#include "chat/jinja/value.h"

namespace vllm::chat::jinja {

// A bound method of str, dict or list named `name`, or an Undefined when the
// type has no such attribute (or when it mutates: using it then raises
// jinja2's SecurityError text).
Value find_method(const Value& self, std::string_view name);

}  // namespace vllm::chat::jinja
