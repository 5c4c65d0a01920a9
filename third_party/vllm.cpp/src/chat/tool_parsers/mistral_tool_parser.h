// Mistral tool calls after the "[TOOL_CALLS]" marker, in either of the
// formats Mistral's tokenizers produce (both handled as vLLM does):
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, ...]   (v3 / Nemo)
//   [TOOL_CALLS]get_weather{"city": "Paris"}[TOOL_CALLS]get_time{}                 (v11; "[ARGS]" may sit
//                                                                                    between name and arguments)
// Text before the first marker is content. A call that does not parse is
// returned as content without its marker (vLLM's fallback).
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class MistralToolParser : public ToolParser {
public:
    explicit MistralToolParser(IdGenerator ids) : ToolParser(std::move(ids)) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class State {
        Text,         // outside calls, looking for the marker
        AfterMarker,  // "[" (a JSON array of calls) or a function name follows
        InArray,      // inside the JSON array, waiting for its closing bracket
        InName,       // reading a v11 function name
        InArguments,  // inside a v11 call's arguments object
    };

    bool step(ToolDelta& out);
    // Malformed call markup: its text is content, and so is what follows up
    // to the next marker.
    void reject(std::string_view text, ToolDelta& out);

    State state_ = State::Text;
    bool text_is_content_ = false;  // outside text after malformed markup
    std::string name_;              // the v11 call's name
    std::string pending_;
    BlockScanner block_scan_{kJsonQuotes};  // InArray / InArguments: where the block closes
};

}  // namespace vllm::chat
