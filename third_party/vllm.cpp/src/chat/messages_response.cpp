// Anthropic Messages responses and stream events (messages_response.h).
#include "chat/messages_response.h"

#include <utility>

#include "chat/openai_protocol.h"
#include "util/error.h"

namespace vllm::chat {

namespace {

json::Value optional_string(const std::optional<std::string>& s) { return s ? json::Value(*s) : json::Value(); }

json::Value usage_json(const Usage& usage) {
    json::Value u = json::Value::object();
    u.set("input_tokens", usage.prompt_tokens);
    u.set("output_tokens", usage.completion_tokens);
    return u;
}

json::Value text_block(const std::string& text) {
    json::Value block = json::Value::object();
    block.set("type", "text");
    block.set("text", text);
    return block;
}

json::Value thinking_block(const std::string& thinking) {
    json::Value block = json::Value::object();
    block.set("type", "thinking");
    block.set("thinking", thinking);
    block.set("signature", "");
    return block;
}

json::Value tool_use_block(const ToolCall& call, json::Value input) {
    json::Value block = json::Value::object();
    block.set("type", "tool_use");
    block.set("id", call.id);
    block.set("name", call.name);
    block.set("input", std::move(input));
    return block;
}

// A call's arguments as its tool_use input; nullopt when they are not a JSON object.
std::optional<json::Value> tool_input(const std::string& arguments) {
    if (arguments.empty()) return json::Value::object();
    try {
        json::Value value = json::parse(arguments);
        if (value.is_object()) return value;
    } catch (const Error&) {
    }
    return std::nullopt;
}

json::Value event(const char* type) {
    json::Value e = json::Value::object();
    e.set("type", type);
    return e;
}

}  // namespace

std::string make_message_id() { return "msg_" + random_alphanumeric(24); }

MessageEnd message_end(const std::string& engine_reason, bool made_tool_calls, bool forced_tool_call,
                       const std::optional<std::string>& matched_stop) {
    const std::string reason = reported_finish_reason(engine_reason, made_tool_calls, forced_tool_call);
    MessageEnd end;
    if (reason == "tool_calls") {
        end.stop_reason = "tool_use";
    } else if (reason == "length") {
        end.stop_reason = "max_tokens";
    } else if (matched_stop) {
        end.stop_reason = "stop_sequence";
        end.stop_sequence = matched_stop;
    }
    return end;
}

std::string build_message(const MessageParts& parts) {
    const ChoiceParts& choice = parts.choice;
    json::Value content = json::Value::array();
    if (choice.reasoning && !choice.reasoning->empty()) content.push_back(thinking_block(*choice.reasoning));
    std::string text = choice.content;
    std::vector<json::Value> tool_uses;
    for (const ToolCall& call : choice.tool_calls) {
        if (std::optional<json::Value> input = tool_input(call.arguments)) {
            tool_uses.push_back(tool_use_block(call, std::move(*input)));
        } else {  // malformed: the client gets the model's words, not a call it cannot run
            if (!text.empty()) text += '\n';
            text += call.arguments;
        }
    }
    if (!text.empty() || (content.items().empty() && tool_uses.empty())) content.push_back(text_block(text));
    for (json::Value& block : tool_uses) content.push_back(std::move(block));
    const MessageEnd end =
        message_end(choice.finish_reason, !tool_uses.empty(), choice.forced_tool_call, parts.matched_stop);
    json::Value message = json::Value::object();
    message.set("id", parts.id);
    message.set("type", "message");
    message.set("role", "assistant");
    message.set("content", std::move(content));
    message.set("model", parts.model);
    message.set("stop_reason", end.stop_reason);
    message.set("stop_sequence", optional_string(end.stop_sequence));
    message.set("usage", usage_json(parts.usage));
    return json::dump(message);
}

MessageEventWriter::MessageEventWriter(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}

std::string MessageEventWriter::message_start(int64_t input_tokens) const {
    json::Value message = json::Value::object();
    message.set("id", id_);
    message.set("type", "message");
    message.set("role", "assistant");
    message.set("content", json::Value::array());
    message.set("model", model_);
    message.set("stop_reason", json::Value());
    message.set("stop_sequence", json::Value());
    Usage usage;
    usage.prompt_tokens = input_tokens;
    message.set("usage", usage_json(usage));
    json::Value e = event("message_start");
    e.set("message", std::move(message));
    return json::dump(e);
}

void MessageEventWriter::open(Block kind, std::vector<std::string>& events, const ToolCall* call, int tool) {
    if (open_ == kind && (kind != Block::ToolUse || tool_index_ == tool)) return;
    close(events);
    open_ = kind;
    ++index_;
    json::Value block;
    switch (kind) {
        case Block::Thinking: block = thinking_block(""); break;
        case Block::Text: block = text_block(""); break;
        case Block::ToolUse:
            block = tool_use_block(*call, json::Value::object());
            tool_index_ = tool;
            made_tool_calls_ = true;
            break;
        case Block::None: return;
    }
    json::Value e = event("content_block_start");
    e.set("index", index_);
    e.set("content_block", std::move(block));
    events.push_back(json::dump(e));
}

void MessageEventWriter::close(std::vector<std::string>& events) {
    if (open_ == Block::None) return;
    json::Value e = event("content_block_stop");
    e.set("index", index_);
    events.push_back(json::dump(e));
    open_ = Block::None;
}

std::vector<std::string> MessageEventWriter::delta(const ChoiceDelta& delta) {
    std::vector<std::string> events;
    auto add = [&](const char* type, const char* key, const std::string& value) {
        json::Value d = json::Value::object();
        d.set("type", type);
        d.set(key, value);
        json::Value e = event("content_block_delta");
        e.set("index", index_);
        e.set("delta", std::move(d));
        events.push_back(json::dump(e));
    };
    if (!delta.reasoning.empty()) {
        open(Block::Thinking, events);
        add("thinking_delta", "thinking", delta.reasoning);
    }
    if (!delta.content.empty()) {
        open(Block::Text, events);
        add("text_delta", "text", delta.content);
    }
    for (const ToolCallDelta& call : delta.tool_calls) {
        open(Block::ToolUse, events, &call.call, call.index);
        if (!call.call.arguments.empty()) add("input_json_delta", "partial_json", call.call.arguments);
    }
    return events;
}

std::vector<std::string> MessageEventWriter::finish(const std::string& engine_reason, bool forced_tool_call,
                                                    const std::optional<std::string>& matched_stop,
                                                    const Usage& usage) {
    std::vector<std::string> events;
    if (index_ < 0) open(Block::Text, events);  // an empty answer is one empty text block, as unstreamed
    close(events);
    const MessageEnd end = message_end(engine_reason, made_tool_calls_, forced_tool_call, matched_stop);
    json::Value d = json::Value::object();
    d.set("stop_reason", end.stop_reason);
    d.set("stop_sequence", optional_string(end.stop_sequence));
    json::Value e = event("message_delta");
    e.set("delta", std::move(d));
    e.set("usage", usage_json(usage));
    events.push_back(json::dump(e));
    events.push_back(json::dump(event("message_stop")));
    return events;
}

}  // namespace vllm::chat
