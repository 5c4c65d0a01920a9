#include "chat/tool_parsers/streamed_arguments.h"

#include "util/error.h"
#include "util/json.h"

namespace vllm::chat {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && is_space(text[at])) ++at;
    return at;
}

bool is_scalar_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E';
}

// A scalar token re-serialized; nullopt when it is not JSON.
std::optional<std::string> canonical_token(std::string_view token) {
    try {
        return arguments_json(json::parse(token));
    } catch (const Error&) {
        return std::nullopt;
    }
}

// The end of the string token opening at text[open] (past its closing
// quote), or npos when it has not closed yet; the scan resumes at `scan`.
size_t string_end(std::string_view text, size_t open, size_t& scan, bool& escaped) {
    if (scan <= open) {
        scan = open + 1;
        escaped = false;
    }
    for (; scan < text.size(); ++scan) {
        if (escaped) {
            escaped = false;
        } else if (text[scan] == '\\') {
            escaped = true;
        } else if (text[scan] == '"') {
            return ++scan;
        }
    }
    return std::string_view::npos;
}

}  // namespace

std::string arguments_json(const json::Value& value) {
    return json::dump(value, {-1, /*python_separators=*/true, /*ensure_ascii=*/false});
}

void ArgumentsReader::after_value() {
    if (open_.empty()) {
        complete_ = true;
        has_member_key_ = true;
    }
    if (open_.size() <= 1) has_member_value_ = true;
    want_ = Want::CommaOrClose;
}

bool ArgumentsReader::take_token(std::string_view text, size_t end) {
    const std::optional<std::string> token = canonical_token(text.substr(at_, end - at_));
    if (!token) {
        broken_ = true;
        return false;
    }
    canonical_ += *token;
    at_ = end;
    return true;
}

void ArgumentsReader::read(std::string_view text, bool at_end) {
    while (!complete_ && !broken_) {
        at_ = skip_space(text, at_);
        if (at_ >= text.size()) return;
        const char c = text[at_];
        const bool in_object = !open_.empty() && open_.back() == '{';
        const bool wants_value = want_ == Want::Value || want_ == Want::ValueOrClose;
        const bool wants_key = want_ == Want::Key || want_ == Want::KeyOrClose;
        if (open_.empty() && want_ == Want::Value && c != '{') {
            broken_ = true;  // arguments that are not an object
        } else if (c == '"' && (wants_value || wants_key)) {
            const size_t end = string_end(text, at_, string_scan_, escaped_);
            if (end == std::string_view::npos || !take_token(text, end)) return;
            if (wants_key) {
                want_ = Want::Colon;
            } else {
                after_value();
            }
        } else if (c == ':' && want_ == Want::Colon) {
            canonical_ += ": ";
            ++at_;
            want_ = Want::Value;
            has_member_key_ = true;
        } else if (c == ',' && want_ == Want::CommaOrClose) {
            canonical_ += ", ";
            ++at_;
            want_ = in_object ? Want::Key : Want::Value;
        } else if ((c == '{' || c == '[') && wants_value && open_.size() < static_cast<size_t>(json::kMaxDepth)) {
            open_.push_back(c);
            canonical_ += c;
            ++at_;
            want_ = c == '{' ? Want::KeyOrClose : Want::ValueOrClose;
        } else if ((c == '}' && in_object && (want_ == Want::KeyOrClose || want_ == Want::CommaOrClose)) ||
                   (c == ']' && !in_object && !open_.empty() &&
                    (want_ == Want::ValueOrClose || want_ == Want::CommaOrClose))) {
            open_.pop_back();
            canonical_ += c;
            ++at_;
            after_value();
        } else if (is_scalar_char(c) && wants_value && !open_.empty()) {
            size_t end = at_;
            while (end < text.size() && is_scalar_char(text[end])) ++end;
            if ((end == text.size() && !at_end) || !take_token(text, end)) return;  // a number may go on
            after_value();
        } else {
            broken_ = true;
        }
    }
}

CallHead read_call_head(std::string_view text, bool accept_parameters) {
    CallHead head;
    size_t at = 0;
    // Each piece in turn: NotYet when the text ends inside it, Never when it differs.
    auto literal = [&](std::string_view expected) {
        at = skip_space(text, at);
        const std::string_view have = text.substr(at, expected.size());
        if (have != expected.substr(0, have.size())) head.state = CallHead::State::Never;
        if (have.size() < expected.size()) return false;
        at += expected.size();
        return head.state != CallHead::State::Never;
    };
    if (!literal("{") || !literal("\"name\"") || !literal(":") || !literal("\"")) return head;
    size_t scan = 0;
    bool escaped = false;
    const size_t end = string_end(text, at - 1, scan, escaped);
    if (end == std::string_view::npos) return head;
    try {
        head.name = json::parse(text.substr(at - 1, end - at + 1)).as_string();
    } catch (const Error&) {
        head.state = CallHead::State::Never;
        return head;
    }
    at = end;
    if (head.name.empty()) head.state = CallHead::State::Never;
    if (!literal(",")) return head;
    // The arguments' key: "parameters" when that is what the text begins.
    const bool parameters = accept_parameters && text.substr(skip_space(text, at), 2) == "\"p";
    if (!literal(parameters ? "\"parameters\"" : "\"arguments\"") || !literal(":")) return head;
    head.state = CallHead::State::Found;
    head.arguments_at = at;
    return head;
}

}  // namespace vllm::chat
