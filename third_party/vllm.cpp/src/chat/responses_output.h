// The Responses API's answer, written from the chat road's output: the
// `response` object and, streaming, its event sequence.
//
// A response's `output` is a list of items in the order the model produced
// them: `reasoning` (a reasoning parser's split, as reasoning_text content),
// `message` (assistant text, one output_text part) and `function_call`
// (one per tool call: call_id, name, arguments). Streaming, each chat
// chunk's delta opens, extends or closes the current item:
//   response.created, response.in_progress (opening());
//   response.output_item.added, then per kind
//     reasoning: response.reasoning_text.delta ... response.reasoning_text.done,
//     message:   response.content_part.added, response.output_text.delta ...
//                response.output_text.done, response.content_part.done,
//     function:  response.function_call_arguments.delta ... .done;
//   response.output_item.done; and last response.completed (or
//   response.incomplete when max_output_tokens cut it short, with
//   incomplete_details.reason "max_output_tokens").
// Every event carries `sequence_number`, from 0. Not streaming, the
// chat.completion's message goes through the same items (so the two
// answers agree). `usage` is input_tokens / output_tokens / total_tokens
// from the chat usage.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/json.h"

namespace vllm::chat {

class ResponsesWriter {
public:
    // `echo`: the request fields the response repeats (ResponsesRequest::echo);
    // `conversation`: the items before the output (history and input), which
    // conversation() extends with the output.
    ResponsesWriter(json::Value echo, json::Value conversation, std::string id, int64_t created_at);

    // The events one chat.completion.chunk makes (none for some chunks); the
    // first chunk's open with response.created and response.in_progress.
    std::vector<json::Value> on_chunk(const json::Value& chunk);
    // Not streaming: the whole chat.completion.
    void on_completion(const json::Value& completion);
    // Closes the open item: its events, then response.completed / .incomplete.
    std::vector<json::Value> closing();

    // The response object (after closing(): its final form).
    json::Value response() const;
    // The conversation with this response's output, for previous_response_id.
    json::Value conversation() const;

private:
    enum class ItemKind { None, Reasoning, Message, FunctionCall };

    std::vector<json::Value> opening();
    json::Value event(const char* type, json::Value fields = json::Value::object());
    void add_reasoning(const std::string& text, std::vector<json::Value>& events);
    void open_message(std::vector<json::Value>& events);
    void add_content(const std::string& text, std::vector<json::Value>& events);
    void add_text_delta(const std::string& text, std::vector<json::Value>& events);
    json::Value open_item_fields() const;  // item_id and output_index of the open item
    void add_tool_call_delta(const json::Value& delta, std::vector<json::Value>& events);
    void open(ItemKind kind, json::Value item, std::vector<json::Value>& events);
    void close(std::vector<json::Value>& events);
    void read_usage(const json::Value& usage);
    std::string item_id(const char* prefix) const;

    json::Value echo_;
    json::Value conversation_;
    std::string id_;
    int64_t created_at_;
    int64_t sequence_ = 0;
    std::vector<json::Value> output_;  // finished items
    std::string status_ = "in_progress";
    std::string finish_reason_ = "stop";
    int64_t input_tokens_ = 0;
    int64_t output_tokens_ = 0;
    bool has_usage_ = false;

    // The open item.
    ItemKind kind_ = ItemKind::None;
    json::Value item_;
    std::string text_;         // its text or arguments so far
    int64_t tool_index_ = -1;  // a function call's index in the chat stream
};

}  // namespace vllm::chat
