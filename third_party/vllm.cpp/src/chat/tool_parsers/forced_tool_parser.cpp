#include "chat/tool_parsers/forced_tool_parser.h"

namespace vllm::chat {

ForcedToolParser::ForcedToolParser(std::string named_function, IdGenerator ids)
    : ToolParser(std::move(ids)), named_function_(std::move(named_function)) {}

ToolDelta ForcedToolParser::feed(std::string_view text) {
    ToolDelta out;
    if (done_) return out;
    pending_ += text;
    while (step(out)) {
    }
    return out;
}

bool ForcedToolParser::step(ToolDelta& out) {
    // Whitespace, and in the array form its brackets and commas, only separate calls.
    const std::string_view separators = named_function_.empty() ? " \t\r\n[," : " \t\r\n";
    const size_t start = pending_.find_first_not_of(separators);
    if (start == std::string::npos) {
        pending_.clear();
        return false;
    }
    pending_.erase(0, start);
    if (pending_.front() != '{') {  // "]": the calls are complete
        done_ = true;
        pending_.clear();
        return false;
    }
    const size_t length = object_scan_.bracketed_length(pending_);
    if (length == std::string::npos) return false;
    const std::optional<json::Value> object = try_parse_json(std::string_view(pending_).substr(0, length));
    bool emitted = false;
    if (object && named_function_.empty()) {
        emitted = emit_call_object(*object, /*accept_parameters=*/true, out);
    } else if (object && object->is_object()) {
        emit_call(named_function_, *object, out);
        emitted = true;
    }
    if (!emitted) emit_content(std::string_view(pending_).substr(0, length), out);
    pending_.erase(0, length);
    if (!named_function_.empty()) done_ = true;
    return !done_;
}

void ForcedToolParser::finish_markup(ToolDelta& out) {
    if (!pending_.empty()) emit_content(pending_, out);  // a call cut short
    pending_.clear();
    done_ = true;
}

}  // namespace vllm::chat
