// Python str semantics over UTF-8 bytes: strings index, slice and count by
// code point, and whitespace is what str.isspace() calls whitespace, so the
// string methods and filters templates use behave as in jinja2.
// Inputs are valid UTF-8 (the template and its JSON context are validated).
// Case mapping (upper/lower/title/capitalize) covers ASCII letters only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vllm::chat::jinja::py {

bool is_ascii(std::string_view s);
size_t length(std::string_view s);  // in code points
// Byte offset of each code point, plus s.size() at the end.
std::vector<size_t> codepoint_offsets(std::string_view s);
// The code points of s as separate strings (iteration, list(s)).
std::vector<std::string> characters(std::string_view s);

bool is_space(uint32_t cp);  // str.isspace()
// Length in bytes of the run of whitespace that ends at `end` (rstrip) / starts at `begin` (lstrip).
size_t trailing_space(std::string_view s);
size_t leading_space(std::string_view s);

// str.strip/lstrip/rstrip; chars absent = whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; sep absent = runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);
int64_t count(std::string_view s, std::string_view sub);
// str.find / str.rfind as a code point index, -1 when absent.
int64_t find(std::string_view s, std::string_view sub, bool from_right);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);

// repr(str): quoted with ' unless the text holds ' and no ", escapes as Python does.
std::string repr(std::string_view s);

}  // namespace vllm::chat::jinja::py
