// Python semantics of the operators and lookups templates use: arithmetic
// (floor division and modulo round toward negative infinity, int / int is a
// float), string and list concatenation and repetition, printf-style `%`,
// comparisons, membership, indexing and slicing (negative indices, steps),
// and jinja2's attribute / item lookup (`a.b` tries the attribute then the
// item, `a['b']` the item then the attribute). Errors are RenderErrors with
// Python's messages; any use of an Undefined raises its UndefinedError.
#pragma once
#include <string_view>

#include "chat/jinja/ast.h"

namespace vllm::chat::jinja {

// Results larger than this (string or list repetition, joins) are refused.
constexpr size_t kMaxResultBytes = size_t{64} << 20;

[[noreturn]] void raise_undefined(const Value& undefined);

Value binary(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v, bool minus);
bool compare(CompareOp op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
// a < b as Python orders values (numbers, strings, lists); TypeError otherwise.
bool less_than(const Value& a, const Value& b);

Value get_attr(const Value& obj, std::string_view name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python's printf-style `fmt % args` (%s %r %d %i %f %e %g %x %o %c %%, flags,
// width, precision, %(name)s with a dict).
std::string percent_format(const std::string& fmt, const Value& args);

// The items a for loop visits: list/tuple items, dict keys, string
// characters; Undefined is empty. TypeError for anything else.
List iterate(const Value& v);
// len(); Undefined has length 0.
size_t length(const Value& v);

}  // namespace vllm::chat::jinja
