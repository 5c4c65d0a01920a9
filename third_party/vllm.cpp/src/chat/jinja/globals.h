// The names every template sees: jinja2's range, namespace, dict, cycler
// and joiner, and transformers' raise_exception and strftime_now.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace vllm::chat::jinja {

// The sandbox refuses ranges longer than this (jinja2's MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

std::vector<std::pair<std::string, Value>> builtin_globals();

}  // namespace vllm::chat::jinja
