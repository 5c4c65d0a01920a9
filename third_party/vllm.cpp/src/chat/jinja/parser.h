// Builds the AST from tokens with jinja2's grammar and operator precedence.
// Statements: if/elif/else, for (with loop filter and else), set (names,
// tuples, namespace attributes, blocks), macro, call, filter, with,
// break/continue, generation, print, raw. Anything else (extends, block,
// include, import, recursive loops, ...) is refused with its line.
#pragma once
#include <string>

#include "chat/jinja/ast.h"

namespace vllm::chat::jinja {

// Throws SyntaxError (with the line) on bad syntax or an unsupported construct.
Template parse(const std::string& source);

}  // namespace vllm::chat::jinja
