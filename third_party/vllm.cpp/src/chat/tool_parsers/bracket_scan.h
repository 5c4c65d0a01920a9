// Where a bracketed block (a JSON object or array, a Python list) or a
// tagged call ends, for parsers that must wait until a call's markup has
// closed before parsing it.
#pragma once
#include <cstddef>
#include <string_view>

namespace vllm::chat {

// text[0] is an opening bracket ('{', '[' or '('). Returns the length of the
// block up to and including the bracket that closes it, counting brackets
// outside string literals (opened and closed by any character of `quotes`,
// with backslash escapes); npos while it has not closed. Bracket kinds are
// not matched against each other: the parser that follows rejects a block
// whose brackets do not pair up.
size_t bracketed_length(std::string_view text, std::string_view quotes);

// The first occurrence of `marker` outside JSON string literals (a closing
// tag quoted inside a call's arguments does not end the call); npos if none.
size_t find_outside_json_strings(std::string_view text, std::string_view marker);

inline constexpr std::string_view kJsonQuotes = "\"";
inline constexpr std::string_view kPythonQuotes = "'\"";

}  // namespace vllm::chat
