// gpt-oss's reasoning (vLLM's openai_gptoss): harmony messages on the
// analysis channel are reasoning; final-channel messages and commentary
// without a recipient (preambles) are content, as their bodies alone.
// Messages addressed to a recipient (tool calls, "to=functions.NAME") go on
// as content in their own markup, for the `openai` tool parser to read;
// text outside any message is content. See harmony_messages.h.
#pragma once
#include <string>
#include <vector>

#include "chat/harmony_messages.h"
#include "chat/reasoning_parsers/reasoning_parser.h"

namespace vllm::chat {

class HarmonyReasoningParser : public ReasoningParser {
public:
    ReasoningDelta feed(std::string_view text) override { return route(reader_.feed(text)); }
    ReasoningDelta finish() override { return route(reader_.finish()); }

private:
    enum class Route { Reasoning, Content, Markup };

    ReasoningDelta route(const std::vector<HarmonyEvent>& events);

    HarmonyReader reader_;
    Route route_ = Route::Content;  // where the open message's body goes
};

}  // namespace vllm::chat
