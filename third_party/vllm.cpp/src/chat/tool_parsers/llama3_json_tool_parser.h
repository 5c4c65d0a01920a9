// Llama 3.x JSON tool calls: the output is one or more JSON objects,
// separated by ";", optionally after "<|python_tag|>":
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// ("arguments" is accepted for "parameters"). As in vLLM's streaming
// parser, an output is calls only when it starts (after whitespace) with
// "{" or "<|python_tag|>"; anything else is plain content. An object that
// does not parse as a call turns it, and the rest of the output, into content.
// An object opened as {"name": "<f>", "parameters": {"<key>": ... (or
// "arguments") streams as hermes does (tool_parser.h): the call is committed
// at its first argument key, and its arguments follow in pieces.
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class Llama3JsonToolParser : public ToolParser {
public:
    explicit Llama3JsonToolParser(IdGenerator ids) : ToolParser(std::move(ids)) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    enum class State {
        Start,         // only whitespace so far: calls or content not yet decided
        ExpectObject,  // after "<|python_tag|>" or ";": the next object's "{"
        InObject,      // inside an object, waiting for its closing brace
        AfterObject,   // after a call: ";" for another, anything else ends the calls
        Content,       // plain text (or malformed calls) to the end
        Dropping,      // text after the calls: dropped
    };

    // One step on pending_; false when it needs more text.
    bool step(ToolDelta& out);
    // The object so far (at_end: whole) read as a streamed call; whether it has begun.
    bool stream_object(std::string_view text, bool at_end, ToolDelta& out);

    State state_ = State::Start;
    std::string leading_space_;  // whitespace before the first object, content again if it fails
    std::string pending_;
    BlockScanner object_scan_{kJsonQuotes};  // InObject: where the object closes
    StreamedCall call_;                      // InObject: the object's call, streamed
};

}  // namespace vllm::chat
