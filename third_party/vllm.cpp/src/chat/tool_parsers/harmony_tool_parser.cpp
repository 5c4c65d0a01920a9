#include "chat/tool_parsers/harmony_tool_parser.h"

namespace vllm::chat {

namespace {
constexpr std::string_view kFunctions = "functions.";
}  // namespace

ToolDelta HarmonyToolParser::feed(std::string_view text) {
    ToolDelta out;
    take(reader_.feed(text), out);
    return out;
}

void HarmonyToolParser::finish_markup(ToolDelta& out) { take(reader_.finish(), out); }

void HarmonyToolParser::take(const std::vector<HarmonyEvent>& events, ToolDelta& out) {
    using Kind = HarmonyEvent::Kind;
    for (const HarmonyEvent& e : events) {
        switch (e.kind) {
            case Kind::OutsideText:
                emit_outside_text(e.text, out);
                break;
            case Kind::MessageStart:
                if (!e.header.recipient.empty()) {
                    route_ = Route::Call;
                    header_ = e.header;
                    body_.clear();
                } else {
                    route_ = e.header.channel == "analysis" ? Route::Dropped : Route::Content;
                }
                break;
            case Kind::BodyText:
                if (route_ == Route::Call) {
                    body_ += e.text;
                } else if (route_ == Route::Content) {
                    emit_outside_text(e.text, out);
                }
                break;
            case Kind::MessageEnd:
                if (route_ == Route::Call) end_call(e.text, out);
                route_ = Route::Content;
                break;
        }
    }
}

void HarmonyToolParser::end_call(std::string_view terminator, ToolDelta& out) {
    const std::string& to = header_.recipient;
    const std::string name = to.rfind(kFunctions, 0) == 0 ? to.substr(kFunctions.size()) : std::string();
    const std::optional<json::Value> arguments = try_parse_json(body_);
    if (!name.empty() && arguments && arguments->is_object()) {
        emit_call(name, *arguments, out);
    } else {
        emit_content(header_.raw + body_ + std::string(terminator), out);
    }
    body_.clear();
}

}  // namespace vllm::chat
