// Hermes / Qwen2.5 / Qwen3 tool calls: one JSON object per call between
// "<tool_call>" and "</tool_call>":
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// The closing tag counts only outside JSON strings, so arguments may quote
// it. A block left open at the end of the output (the model stopped at its end
// token) is still a call when its JSON is whole, as vLLM's regex allows.
//
// A call opened as {"name": "<f>", "arguments": {"<key>": ... streams (as
// vLLM streams hermes calls): its name once the first argument key is read,
// then its arguments piece by piece (streamed_arguments.h); it stays a call
// if the block breaks later, with the arguments as far as they were JSON.
// Other shapes (another key order, arguments not an object, JSON broken
// before the first key) are read when the block closes, as before.
#pragma once
#include <string>

#include "chat/tool_parsers/bracket_scan.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

class HermesToolParser : public ToolParser {
public:
    explicit HermesToolParser(IdGenerator ids) : ToolParser(std::move(ids)) {}
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    // A block's body: a call when it parses, else the block as content.
    void end_block(const std::string& body, bool closed, ToolDelta& out);
    // The streamed call of the block so far (body = pending_); at_end: the
    // body is whole. Whether the block's call streams.
    bool stream_call(const std::string& body, bool at_end, ToolDelta& out);

    bool in_block_ = false;
    std::string pending_;  // outside a block: a tail that may start "<tool_call>"; inside: the body so far
    BlockScanner close_scan_{kJsonQuotes};  // inside a block: where "</tool_call>" may be
    StreamedCall call_;  // the block's streamed call
};

}  // namespace vllm::chat
