// The tag-delimited reasoning splitter behind every dialect: a three-state
// machine (content before the tags, reasoning, content after) configured by
// the dialect's tags and its starting state.
#pragma once
#include <string>

#include "chat/reasoning_parsers/reasoning_parser.h"

namespace vllm::chat {

class ThinkTagParser : public ReasoningParser {
public:
    enum class Phase {
        BeforeReasoning,  // content; an opening tag starts reasoning, a stray closing tag is dropped
        Reasoning,        // reasoning; the closing tag ends it, the first opening tag is dropped
        AfterReasoning,   // content to the end, tags included
    };

    ThinkTagParser(std::string open_tag, std::string close_tag, Phase start);

    ReasoningDelta feed(std::string_view text) override;
    ReasoningDelta finish() override;

private:
    // Appends text to the field of the current phase.
    void emit(std::string_view text, ReasoningDelta& out) const;

    std::string open_tag_;
    std::string close_tag_;
    Phase phase_;
    bool open_tag_seen_ = false;
    std::string pending_;  // tail that may be the start of a tag
};

}  // namespace vllm::chat
