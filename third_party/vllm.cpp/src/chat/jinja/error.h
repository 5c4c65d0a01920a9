// Errors of the template engine. Both carry the template line (0 until the
// interpreter, which knows the statement being run, fills it in); the chat
// template facade turns them into vllm::Error with the line in the message.
#pragma once
#include <stdexcept>
#include <string>

namespace vllm::chat::jinja {

// Lexer/parser: bad syntax or a construct the engine does not support.
class SyntaxError : public std::runtime_error {
public:
    SyntaxError(int line, const std::string& message) : std::runtime_error(message), line(line) {}
    int line;
};

// Rendering: type errors, undefined values used, raise_exception().
class RenderError : public std::runtime_error {
public:
    explicit RenderError(const std::string& message, bool raised_by_template = false)
        : std::runtime_error(message), raised_by_template(raised_by_template) {}
    int line = 0;
    bool raised_by_template;  // raise_exception(): the message is the template's own
};

[[noreturn]] inline void throw_render_error(const std::string& message) { throw RenderError(message); }

}  // namespace vllm::chat::jinja
