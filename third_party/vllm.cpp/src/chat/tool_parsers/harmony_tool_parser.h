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

#include "chat/harmony_messages.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class HarmonyToolParser : public ToolParser, private HarmonyReader::Listener {
public:
    explicit HarmonyToolParser(IdGenerator ids) : ToolParser(std::move(ids)), reader_(*this) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class Route { Content, Dropped, Call };

    void outside_text(std::string_view text) override;
    void message_start(const HarmonyHeader& header) override;
    void body_text(std::string_view text) override;
    void message_end(std::string_view terminator, bool at_output_end) override;

    HarmonyReader reader_;
    Route route_ = Route::Content;
    HarmonyHeader header_;  // Route::Call: the call's header
    std::string body_;      // Route::Call: its arguments so far
    ToolDelta* out_ = nullptr;
};

}  // namespace vllm::chat
