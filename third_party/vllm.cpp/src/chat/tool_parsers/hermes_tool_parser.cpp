#include "chat/tool_parsers/hermes_tool_parser.h"

#include "chat/marker_scan.h"

namespace vllm::chat {

namespace {
constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
}  // namespace

ToolDelta HermesToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    while (true) {
        if (!in_block_) {
            const MarkerMatch open = find_first_marker(pending_, {kOpen});
            if (!open.found()) {
                const size_t keep = partial_marker_length(pending_, {kOpen});
                emit_outside_text(std::string_view(pending_).substr(0, pending_.size() - keep), out);
                pending_.erase(0, pending_.size() - keep);
                break;
            }
            emit_outside_text(std::string_view(pending_).substr(0, open.position), out);
            pending_.erase(0, open.position + kOpen.size());
            in_block_ = true;
        } else {
            const size_t close = close_scan_.find_outside_strings(pending_, kClose);
            if (close == std::string::npos) {
                stream_call(pending_, /*at_end=*/false, out);
                break;
            }
            const std::string body = pending_.substr(0, close);
            pending_.erase(0, close + kClose.size());
            in_block_ = false;
            end_block(body, /*closed=*/true, out);
        }
    }
    return out;
}

void HermesToolParser::finish_markup(ToolDelta& out) {
    if (in_block_) {
        end_block(pending_, /*closed=*/false, out);
    } else {
        emit_outside_text(pending_, out);
    }
    pending_.clear();
    in_block_ = false;
}

bool HermesToolParser::stream_call(const std::string& body, bool at_end, ToolDelta& out) {
    // Committed once a key is read: what breaks before that is still content.
    return stream_call_object(call_, body, at_end, /*accept_parameters=*/false, CommitAt::FirstKey, out);
}

void HermesToolParser::end_block(const std::string& body, bool closed, ToolDelta& out) {
    const bool streamed = stream_call(body, /*at_end=*/true, out);
    call_ = StreamedCall();
    if (streamed) return;
    const std::optional<json::Value> object = try_parse_json(body);
    if (object && emit_call_object(*object, /*accept_parameters=*/false, out)) return;
    emit_content(std::string(kOpen) + body + (closed ? std::string(kClose) : ""), out);
}

}  // namespace vllm::chat
