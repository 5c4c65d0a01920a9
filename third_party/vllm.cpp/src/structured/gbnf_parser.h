// GBNF, the grammar text format of llama.cpp:
//
//   root  ::= item ("," ws item)*     # comments run to the end of the line
//   item  ::= [a-z]+ | "\"" [^"\\]* "\"" | .
//
// Rules end at a newline (inside parentheses and after `::=` or `|`
// newlines are free). Literals "..." and classes [...] (ranges, ^ for
// negation) take the escapes \n \r \t \\ \" \' \[ \] \- \xHH \uHHHH
// \UHHHHHHHH; `.` is any code point. Quantifiers: * + ? {m} {m,} {m,n}.
// Errors are INVALID_ARGUMENT "GBNF syntax error at line L column C: ...",
// or name the undefined / left-recursive rule.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "structured/grammar.h"

namespace vllm::structured {

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const std::string& root = "root");

}  // namespace vllm::structured
