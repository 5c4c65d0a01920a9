#include "chat/reasoning_parsers/harmony_reasoning_parser.h"

namespace vllm::chat {

ReasoningDelta HarmonyReasoningParser::feed(std::string_view text) {
    ReasoningDelta out;
    out_ = &out;
    reader_.feed(text);
    out_ = nullptr;
    return out;
}

ReasoningDelta HarmonyReasoningParser::finish() {
    ReasoningDelta out;
    out_ = &out;
    reader_.finish();
    out_ = nullptr;
    return out;
}

void HarmonyReasoningParser::outside_text(std::string_view text) { out_->content += text; }

void HarmonyReasoningParser::message_start(const HarmonyHeader& header) {
    if (!header.recipient.empty()) {
        route_ = Route::Markup;
        out_->content += header.raw;
    } else {
        route_ = header.channel == "analysis" ? Route::Reasoning : Route::Content;
    }
}

void HarmonyReasoningParser::body_text(std::string_view text) {
    (route_ == Route::Reasoning ? out_->reasoning : out_->content) += text;
}

void HarmonyReasoningParser::message_end(std::string_view terminator, bool at_output_end) {
    // A call's markup stays whole, so what follows cannot run into its body.
    if (route_ == Route::Markup && !at_output_end) out_->content += terminator.empty() ? "<|end|>" : terminator;
    route_ = Route::Content;
}

}  // namespace vllm::chat
