// Builders for Anthropic's Messages responses, as JSON text: the whole
// `message` object, and the events of a stream in Anthropic's order:
// message_start; per content block content_block_start, its deltas
// (text_delta, thinking_delta, input_json_delta) and content_block_stop;
// message_delta with stop_reason, stop_sequence and usage; message_stop.
// Each event is one JSON object whose "type" names it (the SSE event name).
//
// Content blocks, in the order the model wrote them: thinking (what the
// reasoning parser split off; `signature` is "": the engine signs nothing),
// text, then one tool_use block per call ({id, name, input}). A call whose
// arguments are not a JSON object (a model's malformed call) comes back as
// text, never as a tool_use the client cannot read (streaming, its
// arguments go out as they are generated, as Anthropic streams them).
//
// stop_reason: "tool_use" when the output made tool calls (a forced call cut
// short stays "max_tokens", as chat reports "length"), "max_tokens" at the
// length limit, "stop_sequence" when one of the request's stop_sequences
// ended it (named in stop_sequence), else "end_turn".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_response.h"

namespace vllm::chat {

std::string make_message_id();  // "msg_" + 24 alphanumerics

struct MessageEnd {
    std::string stop_reason = "end_turn";
    std::optional<std::string> stop_sequence;  // the stop sequence that ended it
};

// engine_reason: the engine's finish reason ("stop", "length", ...);
// matched_stop: the stop sequence the output ended at, if any.
MessageEnd message_end(const std::string& engine_reason, bool made_tool_calls, bool forced_tool_call,
                       const std::optional<std::string>& matched_stop);

struct MessageParts {
    std::string id;
    std::string model;
    ChoiceParts choice;  // content, reasoning, tool calls, finish_reason
    std::optional<std::string> matched_stop;
    Usage usage;  // prompt_tokens -> input_tokens, completion_tokens -> output_tokens
};

std::string build_message(const MessageParts& parts);

// The events of one streamed message; the block state lives here.
class MessageEventWriter {
public:
    MessageEventWriter(std::string id, std::string model);

    std::string message_start(int64_t input_tokens) const;
    // The events one step's delta adds (none when it carries nothing).
    std::vector<std::string> delta(const ChoiceDelta& delta);
    // Closes the open block; message_delta and message_stop.
    std::vector<std::string> finish(const std::string& engine_reason, bool forced_tool_call,
                                    const std::optional<std::string>& matched_stop, const Usage& usage);

private:
    enum class Block { None, Thinking, Text, ToolUse };
    // Opens a block of `kind` unless it is the open one (a tool_use block
    // per call: `tool` is the call's index).
    void open(Block kind, std::vector<std::string>& events, const ToolCall* call = nullptr, int tool = -1);
    void close(std::vector<std::string>& events);

    std::string id_;
    std::string model_;
    Block open_ = Block::None;
    int index_ = -1;       // the open block's index (blocks count from 0)
    int tool_index_ = -1;  // the open tool_use block's call index
    bool made_tool_calls_ = false;
};

}  // namespace vllm::chat
