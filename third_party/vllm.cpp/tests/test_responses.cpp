// The Responses API's translation (chat/responses_request.h,
// chat/responses_output.h), without a model: requests read into the chat
// request they run as, the refusals naming their field, and the writer's
// items and numbered events from chat chunks, equal to the blocking answer
// of the same output.
#include <string>
#include <vector>

#include "chat/responses_output.h"
#include "chat/responses_request.h"
#include "util/json.h"
#include "check.h"
#include "refusal.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

ResponsesRequest read(const std::string& body, const std::string& history = "null") {
    return read_responses_request(json::parse(body), json::parse(history));
}

void test_request_translation() {
    const ResponsesRequest r = read(R"({
        "model": "smol", "instructions": "Be brief.", "max_output_tokens": 12, "temperature": 0.5, "seed": 3,
        "stream": true, "store": false, "metadata": {"k": "v"}, "reasoning": {"effort": "low", "summary": null},
        "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}, "strict": true}],
        "tool_choice": {"type": "function", "name": "w"},
        "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}},
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
                  {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]},
                  {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{\"a\": 1}"},
                  {"type": "function_call_output", "call_id": "c1", "output": "ok"}]})");
    const json::Value& chat = r.chat_request;
    const json::Value& messages = *chat.find("messages");
    check(messages.size() == 4, "system, user, assistant, tool");
    check(messages.items()[0].find("content")->as_string() == "Be brief.", "instructions first");
    const json::Value& assistant = messages.items()[2];
    check(assistant.find("reasoning_content")->as_string() == "hm", "reasoning on the assistant turn");
    check(assistant.find("tool_calls")->items()[0].find("function")->find("arguments")->find("a")->as_int() == 1,
          "arguments parsed");
    check(messages.items()[3].find("tool_call_id")->as_string() == "c1", "the tool result's call");
    check(chat.find("max_completion_tokens")->as_int() == 12, "max_output_tokens");
    check(chat.find("tools")->items()[0].find("function")->find("name")->as_string() == "w", "tools nested");
    check(chat.find("tool_choice")->find("function")->find("name")->as_string() == "w", "tool_choice nested");
    check(chat.find("response_format")->find("json_schema")->find("name")->as_string() == "s", "text.format");
    check(chat.find("stream_options")->find("include_usage")->as_bool(), "streams ask for usage");
    check(chat.find("reasoning_effort")->as_string() == "low", "reasoning.effort");
    check(!r.store && r.stream && r.echo.find("metadata")->find("k") != nullptr, "store, stream, echo");
    check(r.input_items.size() == 4, "the input's items kept");

    // A string is one user message; the history comes before it.
    const ResponsesRequest next = read(R"({"input": "And?"})", R"([{"type": "message", "role": "user", "content": "Hi"}])");
    check(next.chat_request.find("messages")->size() == 2, "history then input");
    check(next.input_items.items()[0].find("role")->as_string() == "user", "string input as an item");
}

void test_refusals() {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"input": 1})", "'input' must be a string or an array of items"},
        {R"({})", "'input' is required"},
        {R"({"input": []})", "'input' must hold at least one item"},
        {R"({"input": [{"type": "web_search_call"}]})", "'input[0].type' 'web_search_call' is not supported"},
        {R"({"input": [{"role": "bot", "content": "x"}]})", "'input[0].role' must be one of"},
        {R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})", "'input[0].content[0].type'"},
        {R"({"input": [{"type": "function_call_output", "call_id": "x", "output": "y"}]})",
         "'input[0].call_id' 'x' matches no function_call"},
        {R"({"input": "x", "tools": [{"type": "file_search"}]})", "'tools[0].type' 'file_search' is not supported"},
        {R"({"input": "x", "background": true})", "'background' true is not supported"},
        {R"({"input": "x", "max_output_tokens": 0})", "'max_output_tokens' must be at least 1"},
        {R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "'text.format.type' 'yaml' is not supported"},
        {R"({"input": "x", "tool_choice": {"type": "web_search"}})", "'tool_choice.type' 'web_search'"},
        {R"({"input": "x", "previous_response_id": 3})", "'previous_response_id' must be a string"},
        {R"({"input": "x", "reasoning": {"effort": 1}})", "'reasoning.effort' must be a string"},
    };
    for (const auto& [body, words] : cases) {
        const std::string message = refusal([&] { read(body); });
        check(message.find(words) != std::string::npos, body + " -> " + message);
    }
}

json::Value chunk(const std::string& delta, const std::string& finish = "") {
    return json::parse(R"({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": )" + delta +
                       (finish.empty() ? "" : R"(, "finish_reason": ")" + finish + "\"") + "}]}");
}

void test_writer() {
    const ResponsesRequest r = read(R"({"input": "Hi", "model": "m"})");
    ResponsesWriter streamed(r.echo, r.input_items, "resp_1", 7);
    std::vector<json::Value> events;
    for (const json::Value& c : {chunk(R"({"role": "assistant", "content": ""})"), chunk(R"({"reasoning_content": "a"})"),
                                 chunk(R"({"content": "b"})"), chunk(R"({"content": "c"})", "length")})
        for (json::Value& e : streamed.on_chunk(c)) events.push_back(std::move(e));
    for (json::Value& e : streamed.on_chunk(json::parse(
             R"({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}})")))
        events.push_back(std::move(e));
    for (json::Value& e : streamed.closing()) events.push_back(std::move(e));
    bool numbered = true;
    for (size_t i = 0; i < events.size(); ++i)
        numbered = numbered && events[i].find("sequence_number")->as_int() == static_cast<int64_t>(i);
    check(numbered, "sequence numbers from 0");
    check(events.front().find("type")->as_string() == "response.created", "opened by response.created");
    check(events.back().find("type")->as_string() == "response.incomplete", "a length cut is incomplete");
    const json::Value response = streamed.response();
    const json::Value& output = *response.find("output");
    check(output.size() == 2 && output.items()[0].find("type")->as_string() == "reasoning" &&
              output.items()[1].find("content")->items()[0].find("text")->as_string() == "bc",
          "reasoning, then the message's text");
    check(response.find("usage")->find("total_tokens")->as_int() == 7, "usage");
    check(streamed.conversation().size() == 3, "input and output items");

    ResponsesWriter blocking(r.echo, r.input_items, "resp_1", 7);
    blocking.on_completion(json::parse(R"({"object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "reasoning_content": "a", "content": "bc"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 3}})"));
    blocking.closing();
    check(blocking.response() == response, "the blocking answer equals the streamed one");
}

}  // namespace

int main() {
    test_request_translation();
    test_refusals();
    test_writer();
    return report();
}
