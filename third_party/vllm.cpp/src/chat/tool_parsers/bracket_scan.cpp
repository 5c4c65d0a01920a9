#include "chat/tool_parsers/bracket_scan.h"

namespace vllm::chat {

size_t bracketed_length(std::string_view text, std::string_view quotes) {
    size_t depth = 0;
    char quote = 0;  // the open string's quote character, 0 outside strings
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0) {
            if (c == '\\') {
                ++i;  // the escaped character cannot close the string
            } else if (c == quote) {
                quote = 0;
            }
        } else if (quotes.find(c) != std::string_view::npos) {
            quote = c;
        } else if (c == '{' || c == '[' || c == '(') {
            ++depth;
        } else if (c == '}' || c == ']' || c == ')') {
            if (depth == 0 || --depth == 0) return i + 1;
        }
    }
    return std::string_view::npos;
}

size_t find_outside_json_strings(std::string_view text, std::string_view marker) {
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (text.compare(i, marker.size(), marker) == 0) {
            return i;
        }
    }
    return std::string_view::npos;
}

}  // namespace vllm::chat
