// Anthropic Messages protocol tests, no model: the request translation into
// the chat request (messages_request.h: every block kind, tool pairing,
// tool_choice, thinking, prefill, refusals by name) and the response and
// stream-event builders (messages_response.h: block order, stop reasons,
// the event sequence with its indices).
#include <string>
#include <vector>

#include "chat/messages_request.h"
#include "chat/messages_response.h"
#include "util/json.h"
#include "check.h"
#include "refusal.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

json::Value chat_of(const std::string& body, bool count_tokens = false) {
    return json::parse(translate_messages_request(body, count_tokens).chat_request_json);
}

const json::Value& at(const json::Value& v, const char* key) {
    static const json::Value kNull;
    const json::Value* found = v.find(key);
    return found != nullptr ? *found : kNull;
}

void test_translation() {
    const MessagesRequest request = translate_messages_request(R"({
        "model": "smol", "max_tokens": 10, "system": [{"type": "text", "text": "Be"}, {"type": "text", "text": "brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather?", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "sunny"}]}, {"type": "text", "text": "Thanks"}]}],
        "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "get_weather"}, "stop_sequences": ["END"],
        "temperature": 0.5, "top_k": 3, "thinking": {"type": "enabled", "budget_tokens": 2048},
        "metadata": {"user_id": "u"}, "stream": true, "unknown_to_the_engine": 1})");
    const json::Value chat = json::parse(request.chat_request_json);
    check(request.stream && request.stop_sequences == std::vector<std::string>{"END"}, "stream, stop sequences");
    const auto& messages = at(chat, "messages").items();
    check(messages.size() == 5, "system + user + assistant + tool + user");
    check(at(messages[0], "role").as_string() == "system" && at(messages[0], "content").as_string() == "Be\nbrief.",
          "system text blocks joined");
    check(at(messages[2], "reasoning_content").as_string() == "hmm" &&
              at(messages[2], "content").as_string() == "Let me look.",
          "assistant thinking -> reasoning_content, text -> content");
    const json::Value& call = at(messages[2], "tool_calls").items()[0];
    check(at(call, "id").as_string() == "toolu_1" && at(at(call, "function"), "arguments").as_string() ==
                                                          R"({"city":"Oslo"})",
          "tool_use -> tool call with its input as arguments");
    check(at(messages[3], "role").as_string() == "tool" && at(messages[3], "tool_call_id").as_string() == "toolu_1" &&
              at(messages[3], "name").as_string() == "get_weather" && at(messages[3], "content").as_string() == "sunny",
          "tool_result -> tool message named after its tool_use");
    check(at(messages[4], "content").as_string() == "Thanks", "the turn's text after its tool results");
    check(at(at(at(chat, "tool_choice"), "function"), "name").as_string() == "get_weather", "tool_choice tool -> named");
    check(at(at(at(chat, "tools").items()[0], "function"), "parameters") == json::parse(R"({"type": "object"})"),
          "input_schema -> parameters");
    check(at(at(chat, "chat_template_kwargs"), "enable_thinking").as_bool(), "thinking enabled");
    check(at(chat, "stop").items()[0].as_string() == "END" && at(chat, "top_k").as_int() == 3 &&
              at(chat, "max_tokens").as_int() == 10,
          "sampling fields carried");
    check(chat.find("unknown_to_the_engine") == nullptr && chat.find("metadata") == nullptr, "unknown fields dropped");

    const json::Value any = chat_of(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "any"}})");
    check(at(any, "tool_choice").as_string() == "required", "any -> required");
    const json::Value prefill = chat_of(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"},
        {"role": "assistant", "content": "The answer is"}], "thinking": {"type": "disabled"}})");
    check(at(prefill, "continue_final_message").as_bool() && !at(prefill, "add_generation_prompt").as_bool(),
          "a last assistant turn is continued");
    check(!at(at(prefill, "chat_template_kwargs"), "enable_thinking").as_bool(), "thinking disabled");
    const json::Value counted = chat_of(R"({"messages": [{"role": "user", "content": "x"}]})", true);
    check(counted.find("max_tokens") == nullptr, "count_tokens needs no max_tokens");
    const json::Value counted_tools = chat_of(R"({"messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "any"}})", true);
    check(at(counted_tools, "tool_choice").as_string() == "none" && at(counted_tools, "tools").size() == 1,
          "count_tokens renders the tools without a forced call's grammar");
}

void expect_refusal(const std::string& body, const std::string& needle) {
    const std::string message = vllm_test::refusal([&] { translate_messages_request(body); });
    check(message.find(needle) != std::string::npos, body + "\n  expected: " + needle + "\n  got: " + message);
}

void test_refusals() {
    const std::string user = R"("max_tokens": 4, "messages": [{"role": "user", "content": )";
    expect_refusal(R"({"messages": [{"role": "user", "content": "x"}]})", "'max_tokens' is required");
    expect_refusal("{" + user + R"("x"}], "max_tokens": "4"})", "'max_tokens'");
    expect_refusal(R"({"max_tokens": 4, "messages": []})", "'messages' must not be empty");
    expect_refusal(R"({"max_tokens": 4, "messages": [{"role": "tool", "content": "x"}]})",
                   "'messages[0].role' must be one of user, assistant");
    expect_refusal("{" + user + R"([{"type": "image", "source": {}}]}]})",
                   "'messages[0].content[0].type' 'image' is not supported");
    expect_refusal("{" + user + R"([{"type": "document", "source": {}}]}]})", "'document' is not supported");
    expect_refusal("{" + user + R"([{"type": "hologram"}]}]})", "must be one of text, tool_result (got 'hologram')");
    expect_refusal("{" + user + R"([{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}]})",
                   "'t9' answers no tool_use block");
    expect_refusal("{" + user + R"([{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]})",
                   "must be one of text, tool_result (got 'tool_use')");
    expect_refusal("{" + user + R"("x"}], "tools": [{"type": "web_search_20250305", "name": "web_search"}]})",
                   "is a server tool");
    expect_refusal("{" + user + R"("x"}], "tools": [{"name": "f"}]})", "'tools[0].input_schema' is required");
    expect_refusal("{" + user + R"("x"}], "tool_choice": {"type": "any"}})", "has no 'tools'");
    expect_refusal("{" + user + R"("x"}], "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "x"}})",
                   "'tool_choice.type' must be one of auto, any, tool, none");
    expect_refusal("{" + user + R"("x"}], "thinking": {"type": "enabled"}})", "'thinking.budget_tokens' is required");
    expect_refusal("{" + user + R"("x"}], "stop_sequences": "END"})", "'stop_sequences'");
    expect_refusal("{" + user + R"("x"}], "system": 3})", "'system'");
    expect_refusal("{" + user + R"("x"}], "metadata": []})", "'metadata'");
}

MessageParts parts_with(const std::string& content, std::vector<ToolCall> calls, const std::string& finish) {
    MessageParts parts;
    parts.id = "msg_x";
    parts.model = "smol";
    parts.choice.content = content;
    parts.choice.tool_calls = std::move(calls);
    parts.choice.finish_reason = finish;
    parts.usage.prompt_tokens = 7;
    parts.usage.completion_tokens = 3;
    return parts;
}

void test_message() {
    MessageParts parts = parts_with("Hi", {{"toolu_1", "f", R"({"a": 1})"}}, "stop");
    parts.choice.reasoning = "think";
    const json::Value m = json::parse(build_message(parts));
    const auto& blocks = at(m, "content").items();
    check(blocks.size() == 3 && at(blocks[0], "type").as_string() == "thinking" &&
              at(blocks[0], "signature").as_string().empty() && at(blocks[1], "text").as_string() == "Hi" &&
              at(at(blocks[2], "input"), "a").as_int() == 1,
          "thinking, text, tool_use blocks");
    check(at(m, "stop_reason").as_string() == "tool_use" && at(m, "stop_sequence").is_null(), "tool_use stop reason");
    check(at(at(m, "usage"), "input_tokens").as_int() == 7 && at(at(m, "usage"), "output_tokens").as_int() == 3,
          "usage");
    const json::Value malformed = json::parse(build_message(parts_with("", {{"toolu_2", "f", "{oops"}}, "stop")));
    check(at(malformed, "content").items().size() == 1 &&
              at(at(malformed, "content").items()[0], "text").as_string() == "{oops" &&
              at(malformed, "stop_reason").as_string() == "end_turn",
          "a malformed call comes back as text");
    const json::Value empty = json::parse(build_message(parts_with("", {}, "length")));
    check(at(empty, "content").items().size() == 1 && at(empty, "stop_reason").as_string() == "max_tokens",
          "an empty answer is one text block; length -> max_tokens");
    MessageParts stopped = parts_with("a", {}, "stop");
    stopped.matched_stop = "END";
    const json::Value s = json::parse(build_message(stopped));
    check(at(s, "stop_reason").as_string() == "stop_sequence" && at(s, "stop_sequence").as_string() == "END",
          "stop_sequence named");
    check(message_end("length", true, true, std::nullopt).stop_reason == "max_tokens",
          "a forced call cut short stays max_tokens");
}

std::vector<std::string> types_of(const std::vector<std::string>& events) {
    std::vector<std::string> types;
    for (const std::string& e : events) {
        const json::Value v = json::parse(e);
        std::string type = at(v, "type").as_string();
        if (const json::Value* delta = v.find("delta"); delta != nullptr && delta->find("type") != nullptr)
            type += ":" + at(*delta, "type").as_string();
        types.push_back(type + "@" + (v.find("index") != nullptr ? std::to_string(at(v, "index").as_int()) : "-"));
    }
    return types;
}

void test_events() {
    MessageEventWriter writer("msg_x", "smol");
    const json::Value start = json::parse(writer.message_start(7));
    check(at(at(at(start, "message"), "usage"), "input_tokens").as_int() == 7 &&
              at(at(start, "message"), "content").items().empty(),
          "message_start");
    std::vector<std::string> events;
    auto feed = [&](const ChoiceDelta& d) {
        for (std::string& e : writer.delta(d)) events.push_back(std::move(e));
    };
    ChoiceDelta thinking;
    thinking.reasoning = "hm";
    feed(thinking);
    feed(thinking);
    ChoiceDelta text;
    text.content = "Hi";
    feed(text);
    ChoiceDelta call;
    call.tool_calls = {{0, {"toolu_1", "f", "{\"a\""}}};
    feed(call);
    call.tool_calls = {{0, {"", "", ": 1}"}}};
    feed(call);
    call.tool_calls = {{1, {"toolu_2", "g", ""}}};
    feed(call);
    feed(ChoiceDelta{});
    Usage usage;
    usage.completion_tokens = 5;
    for (std::string& e : writer.finish("stop", false, std::nullopt, usage)) events.push_back(std::move(e));
    const std::vector<std::string> expected = {
        "content_block_start@0", "content_block_delta:thinking_delta@0", "content_block_delta:thinking_delta@0",
        "content_block_stop@0", "content_block_start@1", "content_block_delta:text_delta@1", "content_block_stop@1",
        "content_block_start@2", "content_block_delta:input_json_delta@2", "content_block_delta:input_json_delta@2",
        "content_block_stop@2", "content_block_start@3", "content_block_stop@3", "message_delta@-",
        "message_stop@-"};
    const std::vector<std::string> got = types_of(events);
    std::string shown;
    for (const std::string& t : got) shown += t + " ";
    check(got == expected, "event sequence: " + shown);
    const json::Value tool_start = json::parse(events[7]);
    check(at(at(tool_start, "content_block"), "id").as_string() == "toolu_1" &&
              at(at(tool_start, "content_block"), "input").size() == 0,
          "tool_use block opens with its id, name and empty input");
    const json::Value delta = json::parse(events[13]);
    check(at(at(delta, "delta"), "stop_reason").as_string() == "tool_use" &&
              at(at(delta, "usage"), "output_tokens").as_int() == 5,
          "message_delta: tool_use, output tokens");

    MessageEventWriter quiet("msg_y", "smol");
    const std::vector<std::string> nothing = types_of(quiet.finish("length", false, std::nullopt, usage));
    check(nothing == std::vector<std::string>{"content_block_start@0", "content_block_stop@0", "message_delta@-",
                                              "message_stop@-"},
          "an empty stream still has one (empty) text block");
}

}  // namespace

int main() {
    try {
        test_translation();
        test_refusals();
        test_message();
        test_events();
    } catch (const std::exception& e) {
        check(false, std::string("unexpected exception: ") + e.what());
    }
    return report();
}
