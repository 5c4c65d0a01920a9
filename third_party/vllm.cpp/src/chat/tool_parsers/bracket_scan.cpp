#include "chat/tool_parsers/bracket_scan.h"

namespace vllm::chat {

bool BlockScanner::step_string(char c) {
    if (escaped_) {
        escaped_ = false;  // the escaped character cannot close the string
    } else if (quote_ != 0) {
        if (c == '\\') {
            escaped_ = true;
        } else if (c == quote_) {
            quote_ = 0;
        }
    } else if (quotes_.find(c) != std::string_view::npos) {
        quote_ = c;
    } else {
        return false;
    }
    return true;
}

size_t BlockScanner::found(size_t position) {
    *this = BlockScanner(quotes_);
    return position;
}

size_t BlockScanner::bracketed_length(std::string_view text) {
    for (; scanned_ < text.size(); ++scanned_) {
        const char c = text[scanned_];
        if (step_string(c)) continue;
        if (c == '{' || c == '[' || c == '(') {
            ++depth_;
        } else if (c == '}' || c == ']' || c == ')') {
            if (depth_ == 0 || --depth_ == 0) return found(scanned_ + 1);
        }
    }
    return std::string_view::npos;
}

size_t BlockScanner::find_outside_strings(std::string_view text, std::string_view marker) {
    for (; scanned_ < text.size(); ++scanned_) {
        const std::string_view rest = text.substr(scanned_);
        // A tail that may still grow into the marker is read again with the next piece.
        if (rest.size() < marker.size() && quote_ == 0 && !escaped_ && marker.substr(0, rest.size()) == rest) {
            return std::string_view::npos;
        }
        if (step_string(text[scanned_])) continue;
        if (rest.substr(0, marker.size()) == marker) return found(scanned_);
    }
    return std::string_view::npos;
}

}  // namespace vllm::chat
