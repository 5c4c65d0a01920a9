// The tag-delimited reasoning splitter behind the tag dialects: a three-state
// machine (content before the tags, reasoning, content after) configured by
// the dialect's tags (one spelling or several, e.g. Granite's "Here is" /
// "Here's") and its starting state.
#pragma once
#include <string>
#include <vector>

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
    // stray_close_is_content: before reasoning, a closing tag is left in the
    // content (Granite's "Here is my response:" alone is just prose) rather
    // than dropped.
    ThinkTagParser(std::vector<std::string> open_tags, std::vector<std::string> close_tags, Phase start,
                   bool stray_close_is_content = false);

    ReasoningDelta feed(std::string_view text) override;
    ReasoningDelta finish() override;

private:
    // Appends text to the field of the current phase.
    void emit(std::string_view text, ReasoningDelta& out) const;

    std::vector<std::string> open_tags_;
    std::vector<std::string> close_tags_;
    Phase phase_;
    bool stray_close_is_content_ = false;
    bool open_tag_seen_ = false;
    std::string pending_;  // tail that may be the start of a tag
};

}  // namespace vllm::chat
