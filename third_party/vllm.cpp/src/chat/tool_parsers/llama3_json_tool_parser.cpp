#include "chat/tool_parsers/llama3_json_tool_parser.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

size_t leading_whitespace(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
    return i;
}

}  // namespace

ToolDelta Llama3JsonToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    while (step(out)) {
    }
    return out;
}

bool Llama3JsonToolParser::step(ToolDelta& out) {
    switch (state_) {
        case State::Start: {
            const std::string_view rest = std::string_view(pending_).substr(leading_whitespace(pending_));
            if (rest.empty()) return false;
            if (rest.substr(0, kPythonTag.size()) == kPythonTag) {
                pending_.erase(0, pending_.size() - rest.size() + kPythonTag.size());
                state_ = State::ExpectObject;
            } else if (rest.front() == '{') {
                leading_space_ = pending_.substr(0, pending_.size() - rest.size());
                pending_.erase(0, leading_space_.size());
                state_ = State::InObject;
            } else if (rest.size() < kPythonTag.size() && kPythonTag.substr(0, rest.size()) == rest) {
                return false;  // may still become the tag
            } else {
                state_ = State::Content;
            }
            return true;
        }
        case State::ExpectObject: {
            pending_.erase(0, leading_whitespace(pending_));
            if (pending_.empty()) return false;
            state_ = pending_.front() == '{' ? State::InObject : State::Content;
            return true;
        }
        case State::InObject: {
            const size_t length = object_scan_.bracketed_length(pending_);
            if (length == std::string::npos) {
                if (stream_object(pending_, /*at_end=*/false, out)) leading_space_.clear();
                return false;
            }
            const std::string_view text = std::string_view(pending_).substr(0, length);
            const bool streamed = stream_object(text, /*at_end=*/true, out);
            call_ = StreamedCall();
            const std::optional<json::Value> object = streamed ? std::nullopt : try_parse_json(text);
            if (!streamed && (!object || !emit_call_object(*object, /*accept_parameters=*/true, out))) {
                state_ = State::Content;  // the object's text stays pending, released as content
                return true;
            }
            pending_.erase(0, length);
            leading_space_.clear();
            state_ = State::AfterObject;
            return true;
        }
        case State::AfterObject: {
            pending_.erase(0, leading_whitespace(pending_));
            if (pending_.empty()) return false;
            if (pending_.front() == ';') {
                pending_.erase(0, 1);
                state_ = State::ExpectObject;
            } else {
                state_ = State::Dropping;
            }
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

bool Llama3JsonToolParser::stream_object(std::string_view text, bool at_end, ToolDelta& out) {
    return stream_call_object(call_, text, at_end, /*accept_parameters=*/true, CommitAt::FirstKey, out);
}

void Llama3JsonToolParser::finish_markup(ToolDelta& out) {
    // Undecided whitespace or an unclosed object is plain text (unless its
    // call streamed: then it keeps its arguments as far as they were read);
    // what is left after a separator or the tag alone is dropped.
    if (state_ == State::InObject && stream_object(pending_, /*at_end=*/true, out)) state_ = State::Dropping;
    if (state_ == State::Start || state_ == State::InObject) {
        out.content += leading_space_;
        out.content += pending_;
    }
    leading_space_.clear();
    pending_.clear();
    state_ = State::Dropping;
}

}  // namespace vllm::chat
