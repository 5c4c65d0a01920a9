#include "chat/tool_parsers/mistral_tool_parser.h"

#include "chat/marker_scan.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kMarker = "[TOOL_CALLS]";
constexpr std::string_view kArgsMarker = "[ARGS]";

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

ToolDelta MistralToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    while (step(out)) {
    }
    return out;
}

void MistralToolParser::reject(std::string_view text, ToolDelta& out) {
    emit_content(text, out);
    text_is_content_ = true;
    state_ = State::Text;
}

bool MistralToolParser::step(ToolDelta& out) {
    switch (state_) {
        case State::Text: {
            auto release = [&](std::string_view text) {
                if (text_is_content_) {
                    emit_content(text, out);
                } else {
                    emit_outside_text(text, out);
                }
            };
            const MarkerMatch marker = find_first_marker(pending_, {kMarker});
            if (!marker.found()) {
                const size_t keep = partial_marker_length(pending_, {kMarker});
                release(std::string_view(pending_).substr(0, pending_.size() - keep));
                pending_.erase(0, pending_.size() - keep);
                return false;
            }
            release(std::string_view(pending_).substr(0, marker.position));
            pending_.erase(0, marker.position + kMarker.size());
            text_is_content_ = false;
            state_ = State::AfterMarker;
            return true;
        }
        case State::AfterMarker: {
            size_t i = 0;
            while (i < pending_.size() && is_space(pending_[i])) ++i;
            pending_.erase(0, i);
            if (pending_.empty()) return false;
            if (pending_.front() == '[') {
                state_ = State::InArray;
            } else if (is_name_char(pending_.front())) {
                name_.clear();
                state_ = State::InName;
            } else {
                reject("", out);  // the text that follows is content
            }
            return true;
        }
        case State::InArray: {
            const size_t length = block_scan_.bracketed_length(pending_);
            if (length == std::string::npos) return false;
            const std::string_view array_text = std::string_view(pending_).substr(0, length);
            const std::optional<json::Value> array = try_parse_json(array_text);
            bool all_calls = array && array->is_array() && array->size() > 0;
            for (size_t i = 0; all_calls && i < array->items().size(); ++i) {
                const json::Value& item = array->items()[i];
                const json::Value* name = item.is_object() ? item.find("name") : nullptr;
                all_calls = name != nullptr && name->is_string() && !name->as_string().empty() &&
                            item.find("arguments") != nullptr;
            }
            if (all_calls) {
                for (const json::Value& item : array->items()) emit_call_object(item, false, out);
                state_ = State::Text;
            } else {
                reject(array_text, out);
            }
            pending_.erase(0, length);
            return true;
        }
        case State::InName: {
            size_t i = 0;
            while (i < pending_.size() && is_name_char(pending_[i])) ++i;
            name_ += pending_.substr(0, i);
            pending_.erase(0, i);
            if (pending_.empty()) return false;
            const std::string_view rest = pending_;
            if (rest.front() == '{') {
                state_ = State::InArguments;
            } else if (rest.substr(0, kArgsMarker.size()) == kArgsMarker) {
                pending_.erase(0, kArgsMarker.size());
            } else if (rest.size() < kArgsMarker.size() && kArgsMarker.substr(0, rest.size()) == rest) {
                return false;  // may still become "[ARGS]"
            } else {
                reject(name_, out);
            }
            return true;
        }
        case State::InArguments: {
            const size_t length = block_scan_.bracketed_length(pending_);
            if (length == std::string::npos) return false;
            const std::string_view arguments_text = std::string_view(pending_).substr(0, length);
            const std::optional<json::Value> arguments = try_parse_json(arguments_text);
            if (arguments && arguments->is_object()) {
                emit_call(name_, *arguments, out);
                state_ = State::Text;
            } else {
                reject(name_ + std::string(arguments_text), out);
            }
            pending_.erase(0, length);
            return true;
        }
    }
    return false;
}

void MistralToolParser::finish_markup(ToolDelta& out) {
    switch (state_) {
        case State::Text:
            if (text_is_content_) {
                emit_content(pending_, out);
            } else {
                emit_outside_text(pending_, out);
            }
            break;
        case State::AfterMarker:
            break;  // a marker with nothing after it
        case State::InName:
        case State::InArguments:
            emit_content(name_ + pending_, out);
            break;
        case State::InArray:
            emit_content(pending_, out);
            break;
    }
    pending_.clear();
    name_.clear();
    state_ = State::Text;
}

}  // namespace vllm::chat
