#include "chat/reasoning_parsers/harmony_reasoning_parser.h"

namespace vllm::chat {

ReasoningDelta HarmonyReasoningParser::route(const std::vector<HarmonyEvent>& events) {
    using Kind = HarmonyEvent::Kind;
    ReasoningDelta out;
    for (const HarmonyEvent& e : events) {
        switch (e.kind) {
            case Kind::OutsideText:
                out.content += e.text;
                break;
            case Kind::MessageStart:
                if (!e.header.recipient.empty()) {
                    route_ = Route::Markup;
                    out.content += e.header.raw;
                } else {
                    route_ = e.header.channel == "analysis" ? Route::Reasoning : Route::Content;
                }
                break;
            case Kind::BodyText:
                (route_ == Route::Reasoning ? out.reasoning : out.content) += e.text;
                break;
            case Kind::MessageEnd:
                // A call's markup stays whole, so what follows cannot run into its body.
                if (route_ == Route::Markup && !e.at_output_end) out.content += e.text.empty() ? "<|end|>" : e.text;
                route_ = Route::Content;
                break;
        }
    }
    return out;
}

}  // namespace vllm::chat
