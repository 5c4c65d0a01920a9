// Typed reads of a JSON request body's fields, whose errors name the field
// the way an OpenAI client sees it: INVALID_ARGUMENT "'temperature' must be
// a number (got string)", "'top_p' must be in (0, 1] (got 2)". Shared by the
// chat request and the per-request sampling options, which read the same
// OpenAI fields.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "util/json.h"

namespace vllm::json {

// `text` parsed as one JSON object (a config or options string):
// INVALID_ARGUMENT "<what> is not valid JSON: ..." or "<what> must be a JSON
// object (got ...)".
Value parse_object(std::string_view text, const std::string& what);

// A member that is present and not null, else nullptr (OpenAI clients send
// null for "not given").
const Value* field(const Value& object, std::string_view key);

[[noreturn]] void wrong_type(const std::string& name, const std::string& expected, const Value& got);
[[noreturn]] void out_of_range(const std::string& name, const std::string& range, double got);

double read_number(const Value& v, const std::string& name);
// Integers; a float with no fraction (1.0) is accepted as Python's pydantic does.
int64_t read_integer(const Value& v, const std::string& name);
// An integer in [lo, hi] ("'n' must be between 1 and 128 (got 0)": `range`
// words the bounds).
int32_t read_int32_in(const Value& v, const std::string& name, int64_t lo, int64_t hi, const std::string& range);
bool read_bool(const Value& v, const std::string& name);
const std::string& read_string(const Value& v, const std::string& name);
void require_object(const Value& v, const std::string& name);
void require_array(const Value& v, const std::string& name);
// object.key as a string; "'<owner>.<key>' is required" when it is absent or null.
const std::string& required_string(const Value& object, std::string_view key, const std::string& owner);

}  // namespace vllm::json
