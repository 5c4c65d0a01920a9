// Turns a choice's generated text into the parts of an assistant message:
// the reasoning parser splits off the thinking first, then the tool parser
// reads calls from what is left (vLLM's order), streaming or whole.
#pragma once
#include <memory>
#include <string_view>

#include "chat/chat_response.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class ChatOutputParser {
public:
    // Either parser may be null: no reasoning split / no tool calls parsed
    // (tool_choice "none" or no dialect).
    ChatOutputParser(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolParser> tools);

    // Streaming: each piece of generated text in, what to send out.
    ChoiceDelta feed(std::string_view text);
    ChoiceDelta finish();

    // Whole output: sets choice.content, choice.reasoning (when the
    // reasoning parser found any) and choice.tool_calls.
    void parse_all(std::string_view text, ChoiceParts& choice);

private:
    ChoiceDelta route(ReasoningDelta split);

    std::unique_ptr<ReasoningParser> reasoning_;
    std::unique_ptr<ToolParser> tools_;
};

}  // namespace vllm::chat
