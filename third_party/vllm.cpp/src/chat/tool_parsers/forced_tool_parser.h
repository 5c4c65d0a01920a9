// Reads back the tool calls that chat_constraint.h forced on the output
// (tool_choice "required" or a named function), whatever the model's own
// tool-call dialect: the grammar made the output plain JSON.
//
//   named function   the output is the arguments object: one call to it
//   "required"       [{"name": "f", "parameters": {...}}, ...]: one call each
//
// As the dialect parsers do, a call is released whole once its object has
// closed. An object cut short (finish_reason "length") is content.
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

    std::string named_function_;
    std::string pending_;
    BlockScanner object_scan_{kJsonQuotes};  // where the call object being read closes
    bool done_ = false;  // the array (or the named call) has closed: the rest is dropped
};

}  // namespace vllm::chat
