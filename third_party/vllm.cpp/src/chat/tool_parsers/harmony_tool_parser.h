// gpt-oss's tool calls (vLLM's `openai` parser): harmony messages addressed
// to "functions.NAME" are calls, their bodies the JSON arguments:
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>
// (the recipient may also stand before the channel:
// "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>").
// "<|call|>" ends the output (it is gpt-oss's end token, so usually absent
// from the text): a call still open at the end is read as it stands.
// Final-channel messages and commentary without a recipient are content;
// analysis messages are the reasoning parser's (openai_gptoss) and are
// dropped here; text outside messages (what openai_gptoss already turned
// into content) is content. A call to another recipient (a built-in tool
// such as "browser.search") or with arguments that are not a JSON object is
// content, in its markup.
#pragma once
#include <string>
#include <vector>

#include "chat/harmony_messages.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class HarmonyToolParser : public ToolParser {
public:
    explicit HarmonyToolParser(IdGenerator ids) : ToolParser(std::move(ids)) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class Route { Content, Dropped, Call };

    void take(const std::vector<HarmonyEvent>& events, ToolDelta& out);
    // The end of a call's message: the call, or its markup as content.
    void end_call(std::string_view terminator, ToolDelta& out);

    HarmonyReader reader_;
    Route route_ = Route::Content;  // where the open message's body goes
    HarmonyHeader header_;          // Route::Call: the call's header
    std::string body_;              // Route::Call: its arguments so far
};

}  // namespace vllm::chat
