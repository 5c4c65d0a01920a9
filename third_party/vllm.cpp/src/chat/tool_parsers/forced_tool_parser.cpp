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
    if (length == std::string::npos) {
        stream(pending_, /*at_end=*/false, out);
        return false;
    }
    const std::string_view text = std::string_view(pending_).substr(0, length);
    bool emitted = stream(text, /*at_end=*/true, out);
    call_ = StreamedCall();
    if (!emitted) {  // not streamed (another key order, arguments not an object, ...): read whole
        const std::optional<json::Value> object = try_parse_json(text);
        if (object && named_function_.empty()) {
            emitted = emit_call_object(*object, /*accept_parameters=*/true, out);
        } else if (object && object->is_object()) {
            emit_call(named_function_, *object, out);
            emitted = true;
        }
    }
    if (!emitted) emit_content(text, out);
    pending_.erase(0, length);
    if (!named_function_.empty()) done_ = true;
    return !done_;
}

bool ForcedToolParser::stream(std::string_view object, bool at_end, ToolDelta& out) {
    if (named_function_.empty())
        return stream_call_object(call_, object, at_end, /*accept_parameters=*/true, CommitAt::FirstMember, out);
    return stream_arguments(call_, named_function_, object, at_end, CommitAt::FirstMember, out);
}

void ForcedToolParser::finish_markup(ToolDelta& out) {
    // A call cut short: content, unless it has begun.
    if (!pending_.empty() && !done_ && !stream(pending_, /*at_end=*/true, out)) emit_content(pending_, out);
    pending_.clear();
    done_ = true;
}

}  // namespace vllm::chat
