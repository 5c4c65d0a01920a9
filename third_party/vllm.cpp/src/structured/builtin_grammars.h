// Grammars every front end shares, as GBNF text: JSON values (with bounded
// whitespace), choice lists, and the quoting of literals.
#pragma once
#include <string>
#include <vector>

namespace vllm::structured {

// Whitespace between JSON tokens: what JSON allows ([ \t\n\r]), at most
// this many in a row, so a model cannot emit spaces forever.
constexpr int kMaxJsonWhitespace = 32;

// Digits of a JSON number are bounded for the same reason (as llama.cpp's
// schema converter bounds them): an integer part of at most 19 digits
// (int64's magnitude), at most 16 fraction digits (past a double's
// precision) and 3 exponent digits.
constexpr int kMaxIntegerDigits = 19;
constexpr int kMaxFractionDigits = 16;
constexpr int kMaxExponentDigits = 3;

// A GBNF string literal matching exactly `utf8` (quotes included).
// INVALID_ARGUMENT when `utf8` is not valid UTF-8, naming `what`.
std::string gbnf_literal(const std::string& utf8, const std::string& what = "literal");

// GBNF rules for JSON values, all prefixed "json-": json-value, json-object,
// json-array, json-string, json-char (one character of a string's
// content), json-number, json-ws. No root rule. \u escapes of surrogates
// are left out (a lone one is not text; astral characters come as UTF-8),
// so each json-char is exactly one character of the decoded string.
std::string json_value_rules();

// root ::= any JSON object.
std::string json_object_gbnf();

// root ::= one of the choices. INVALID_ARGUMENT for an empty list or a
// choice that is not valid UTF-8.
std::string choice_gbnf(const std::vector<std::string>& choices);

}  // namespace vllm::structured
