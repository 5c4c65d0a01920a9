// Reads back the tool calls that chat_constraint.h forced on the output
// (tool_choice "required" or a named function), whatever the model's own
// tool-call dialect: the grammar made the output plain JSON.
//
//   named function   the output is the arguments object: one call to it
//   "required"       [{"name": "f", "parameters": {...}}, ...]: one call each
//
// A call streams as vLLM streams forced calls (tool_parser.h): it is
// committed once its arguments' first member is whole, then its arguments
// follow in pieces. An object cut short before that (finish_reason
// "length") is content; one cut later keeps its arguments as far as they
// were read.
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class ForcedToolParser : public ToolParser {
public:
    // named_function: the function tool_choice names; "" for "required".
    ForcedToolParser(std::string named_function, IdGenerator ids);
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    // One call from pending_; false when it needs more text.
    bool step(ToolDelta& out);
    // The call object so far (at_end: whole) streamed; whether it has begun.
    bool stream(std::string_view object, bool at_end, ToolDelta& out);

    std::string named_function_;
    std::string pending_;
    BlockScanner object_scan_{kJsonQuotes};  // where the call object being read closes
    StreamedCall call_;                      // the call object being read, streamed
    bool done_ = false;  // the array (or the named call) has closed: the rest is dropped
};

}  // namespace vllm::chat
