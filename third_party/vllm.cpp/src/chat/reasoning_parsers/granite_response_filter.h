// Granite 3.3's answers wrapped as its template asks ("write your response
// between <response></response>"): the granite dialect's content without
// the wrapper, as llama.cpp reads it. The content's opening "<response>"
// (after whitespace) goes, and then its closing "</response>" where it ends
// the output (trailing whitespace too); content that does not open with the
// wrapper passes unchanged. Streamed, a tail that may still be the wrapper's
// tag is held back until it is decided, so the pieces add up to the whole.
#pragma once
#include <memory>
#include <string>

#include "chat/reasoning_parsers/reasoning_parser.h"

namespace vllm::chat {

class GraniteResponseFilter : public ReasoningParser {
public:
    explicit GraniteResponseFilter(std::unique_ptr<ReasoningParser> inner) : inner_(std::move(inner)) {}
    ReasoningDelta feed(std::string_view text) override;
    ReasoningDelta finish() override;

private:
    // The content of one delta with the wrapper taken out; at_end: the last.
    std::string filter(std::string_view content, bool at_end);

    enum class Start { Undecided, Wrapped, Plain };
    std::unique_ptr<ReasoningParser> inner_;
    Start start_ = Start::Undecided;
    // Undecided: the content so far; Wrapped: a tail that may be the closing tag.
    std::string held_;
};

}  // namespace vllm::chat
