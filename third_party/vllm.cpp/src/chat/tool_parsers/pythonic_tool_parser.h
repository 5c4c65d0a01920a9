// Pythonic tool calls (Llama 3.2 / 4 pythonic templates, ToolACE): the
// whole output is a Python list of calls, optionally wrapped in
// "<|python_start|>" ... "<|python_end|>":
//   [get_weather(city='Paris'), get_time(zone="UTC")]
// As in vLLM, an output is calls only when it starts (after whitespace)
// with "[", and the list is taken whole: if any part of it is not a call
// with literal arguments (python_calls.h), all of it is content.
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class PythonicToolParser : public ToolParser {
public:
    explicit PythonicToolParser(IdGenerator ids) : ToolParser(std::move(ids)) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class State {
        Start,     // only whitespace (or the start tag) so far
        InList,    // inside the list, waiting for its closing bracket
        Content,   // plain text to the end
        Dropping,  // after the list: dropped
    };

    bool step(ToolDelta& out);

    State state_ = State::Start;
    std::string leading_space_;  // whitespace before the list, content again if it fails
    std::string pending_;
    BlockScanner list_scan_{kPythonQuotes};  // InList: where the list closes
};

}  // namespace vllm::chat
