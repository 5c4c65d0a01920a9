// Reads a Python list of function calls with literal keyword arguments,
//   [get_weather(city='Paris', days=3), get_time(zone="UTC")]
// the subset of Python vLLM's pythonic parser accepts through `ast`:
// calls by plain name, keyword arguments only, values that are string,
// number, True/False/None, list or dict literals (dict keys strings or
// integers). Each call's arguments come back as a JSON object.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace vllm::chat {

struct PythonCall {
    std::string name;
    json::Value arguments;  // object, in keyword order
};

// nullopt when `text` is anything but such a list (surrounding whitespace allowed).
std::optional<std::vector<PythonCall>> parse_python_call_list(std::string_view text);

// One literal of that subset (Python's ast.literal_eval on it), or nullopt.
std::optional<json::Value> parse_python_literal(std::string_view text);

}  // namespace vllm::chat
