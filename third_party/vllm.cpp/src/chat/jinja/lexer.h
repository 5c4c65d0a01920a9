// Splits a template into tokens the way jinja2's lexer does with
// trim_blocks and lstrip_blocks on (Hugging Face's settings): text between
// tags, tag delimiters, and the tokens inside tags. Whitespace control
// (`{%-`, `-%}`, `{%+`, `+%}`, the same on `{{ }}` and `{# #}`), comments and
// `{% raw %}` are resolved here, so the parser only sees text and tags.
#pragma once
#include <string>
#include <vector>

namespace vllm::chat::jinja {

enum class TokenType {
    Text,           // template text (value: the text)
    VariableBegin,  // {{
    VariableEnd,    // }}
    BlockBegin,     // {%
    BlockEnd,       // %}
    Name,
    String,         // value: the decoded string
    Integer,        // value: digits without underscores, base prefix kept
    Float,          // value: digits without underscores
    Operator,       // value: the operator's spelling
    End,            // end of the template
};

struct Token {
    TokenType type;
    std::string value;
    int line;
};

// Throws SyntaxError (with the line) on an unterminated tag, comment,
// string or raw block, or a character that cannot start a token.
std::vector<Token> tokenize(const std::string& source);

// The token as jinja2's error messages name it ("end of print statement", "foo", "]").
std::string describe(const Token& token);

}  // namespace vllm::chat::jinja
