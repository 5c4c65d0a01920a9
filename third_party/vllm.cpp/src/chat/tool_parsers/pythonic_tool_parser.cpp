#include "chat/tool_parsers/pythonic_tool_parser.h"

#include "chat/tool_parsers/python_calls.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kStartTag = "<|python_start|>";

size_t leading_whitespace(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
    return i;
}

}  // namespace

ToolDelta PythonicToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    while (step(out)) {
    }
    return out;
}

bool PythonicToolParser::step(ToolDelta& out) {
    switch (state_) {
        case State::Start: {
            const size_t skip = leading_whitespace(pending_);
            const std::string_view rest = std::string_view(pending_).substr(skip);
            if (rest.empty()) return false;
            if (rest.front() == '[') {
                leading_space_ = pending_.substr(0, skip);
                pending_.erase(0, skip);
                state_ = State::InList;
            } else if (rest.substr(0, kStartTag.size()) == kStartTag) {
                pending_.erase(0, skip + kStartTag.size());
            } else if (rest.size() < kStartTag.size() && kStartTag.substr(0, rest.size()) == rest) {
                return false;  // may still become the start tag
            } else {
                state_ = State::Content;
            }
            return true;
        }
        case State::InList: {
            const size_t length = list_scan_.bracketed_length(pending_);
            if (length == std::string::npos) return false;
            const auto calls = parse_python_call_list(std::string_view(pending_).substr(0, length));
            if (!calls || calls->empty()) {
                state_ = State::Content;  // the list's text stays pending, released as content
                return true;
            }
            for (const PythonCall& call : *calls) emit_call(call.name, call.arguments, out);
            pending_.erase(0, length);
            state_ = State::Dropping;
            return true;
        }
        case State::Content:
            out.content += leading_space_;
            out.content += pending_;
            leading_space_.clear();
            pending_.clear();
            return false;
        case State::Dropping:
            pending_.clear();
            return false;
    }
    return false;
}

void PythonicToolParser::finish_markup(ToolDelta& out) {
    if (state_ == State::Start || state_ == State::InList) {
        out.content += leading_space_;
        out.content += pending_;
    }
    leading_space_.clear();
    pending_.clear();
    state_ = State::Dropping;
}

}  // namespace vllm::chat
