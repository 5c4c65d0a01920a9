#include "chat/chat_output_parser.h"

namespace vllm::chat {

namespace {
void append(ChoiceDelta& to, const ToolDelta& from) {
    to.content += from.content;
    for (const ToolCallDelta& call : from.calls) append_call_delta(to.tool_calls, call);
}
}  // namespace

ChatOutputParser::ChatOutputParser(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolParser> tools)
    : reasoning_(std::move(reasoning)), tools_(std::move(tools)) {}

ChoiceDelta ChatOutputParser::route(ReasoningDelta split) {
    ChoiceDelta out;
    out.reasoning = std::move(split.reasoning);
    if (tools_) {
        append(out, tools_->feed(split.content));
    } else {
        out.content = std::move(split.content);
    }
    return out;
}

ChoiceDelta ChatOutputParser::feed(std::string_view text) {
    if (!reasoning_) return route({"", std::string(text)});
    return route(reasoning_->feed(text));
}

ChoiceDelta ChatOutputParser::finish() {
    ChoiceDelta out = reasoning_ ? route(reasoning_->finish()) : ChoiceDelta{};
    if (tools_) append(out, tools_->finish());
    return out;
}

void ChatOutputParser::parse_all(std::string_view text, ChoiceParts& choice) {
    ChoiceDelta all = feed(text);
    ChoiceDelta tail = finish();
    all.reasoning += tail.reasoning;
    all.content += tail.content;
    choice.content = std::move(all.content);
    choice.reasoning = all.reasoning.empty() ? std::nullopt : std::optional<std::string>(std::move(all.reasoning));
    ToolParseResult calls;
    accumulate(calls, ToolDelta{"", std::move(all.tool_calls)});
    accumulate(calls, ToolDelta{"", std::move(tail.tool_calls)});
    choice.tool_calls = std::move(calls.calls);
}

}  // namespace vllm::chat
