// gpt-oss's reasoning (vLLM's openai_gptoss): harmony messages on the
// analysis channel are reasoning; final-channel messages and commentary
// without a recipient (preambles) are content, as their bodies alone.
// Messages addressed to a recipient (tool calls, "to=functions.NAME") go on
// as content in their own markup, for the `openai` tool parser to read;
// text outside any message is content. See harmony_messages.h.
#pragma once
#include <string>

#include "chat/harmony_messages.h"
#include "chat/reasoning_parsers/reasoning_parser.h"

namespace vllm::chat {

class HarmonyReasoningParser : public ReasoningParser, private HarmonyReader::Listener {
public:
    HarmonyReasoningParser() : reader_(*this) {}
    ReasoningDelta feed(std::string_view text) override;
    ReasoningDelta finish() override;

private:
    enum class Route { Reasoning, Content, Markup };

    void outside_text(std::string_view text) override;
    void message_start(const HarmonyHeader& header) override;
    void body_text(std::string_view text) override;
    void message_end(std::string_view terminator, bool at_output_end) override;

    HarmonyReader reader_;
    Route route_ = Route::Content;
    ReasoningDelta* out_ = nullptr;  // the delta being built by feed()/finish()
};

}  // namespace vllm::chat
