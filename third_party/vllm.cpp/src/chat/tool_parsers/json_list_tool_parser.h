// The dialects that write their calls as one JSON list of
// {"name": ..., "arguments": {...}} objects after a marker:
//
// granite (Granite 3.x): the output starts (after whitespace) with the list,
//   after an optional "<|tool_call|>" (3.0) or "<tool_call>" (3.1):
//   <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//   Anything else first: the whole output is content.
// phi4_mini_json (Phi-4-mini): "functools" and the list, anywhere:
//   functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//   text before it is content; "parameters" stands for "arguments", and a
//   call with neither has {} (as vLLM reads it).
//
// The list is taken whole when its bracket closes: any element that is not
// a call makes all of it content, as written.
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class JsonListToolParser : public ToolParser {
public:
    enum class Form { Granite, Phi4Mini };

    JsonListToolParser(IdGenerator ids, Form form) : ToolParser(std::move(ids)), form_(form) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class State {
        Start,   // granite: only whitespace (and the marker) so far
        Text,    // text outside the list (phi4_mini_json: a "functools[" may follow)
        InList,  // inside the list, waiting for its closing bracket
    };

    bool step(ToolDelta& out);
    // The closed list (pending_[0, length)) as calls, or as content.
    void end_list(size_t length, ToolDelta& out);

    Form form_;
    State state_ = State::Start;
    std::string prefix_;   // the marker (and whitespace) before the list, content again if it fails
    std::string pending_;  // InList: the list from its "[" on
    BlockScanner list_scan_{kJsonQuotes};
};

}  // namespace vllm::chat
