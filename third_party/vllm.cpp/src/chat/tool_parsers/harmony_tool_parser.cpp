#include "chat/tool_parsers/harmony_tool_parser.h"

namespace vllm::chat {

namespace {
constexpr std::string_view kFunctions = "functions.";
}  // namespace

ToolDelta HarmonyToolParser::feed(std::string_view text) {
    ToolDelta out;
    out_ = &out;
    reader_.feed(text);
    out_ = nullptr;
    return out;
}

void HarmonyToolParser::finish_markup(ToolDelta& out) {
    out_ = &out;
    reader_.finish();
    out_ = nullptr;
}

void HarmonyToolParser::outside_text(std::string_view text) { emit_outside_text(text, *out_); }

void HarmonyToolParser::message_start(const HarmonyHeader& header) {
    if (!header.recipient.empty()) {
        route_ = Route::Call;
        header_ = header;
        body_.clear();
    } else {
        route_ = header.channel == "analysis" ? Route::Dropped : Route::Content;
    }
}

void HarmonyToolParser::body_text(std::string_view text) {
    if (route_ == Route::Call) {
        body_ += text;
    } else if (route_ == Route::Content) {
        emit_outside_text(text, *out_);
    }
}

void HarmonyToolParser::message_end(std::string_view terminator, bool) {
    if (route_ == Route::Call) {
        const std::string& to = header_.recipient;
        const std::string name = to.rfind(kFunctions, 0) == 0 ? to.substr(kFunctions.size()) : std::string();
        const std::optional<json::Value> arguments = try_parse_json(body_);
        if (!name.empty() && arguments && arguments->is_object()) {
            emit_call(name, *arguments, *out_);
        } else {
            emit_content(header_.raw + body_ + std::string(terminator), *out_);
        }
        body_.clear();
    }
    route_ = Route::Content;
}

}  // namespace vllm::chat
