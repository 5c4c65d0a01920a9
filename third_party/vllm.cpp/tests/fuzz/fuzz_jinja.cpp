// The Jinja lexer, parser and interpreter (chat/chat_template.h): the input
// is a chat template, rendered over a fixed conversation with a tool call.
#include "chat/chat_template.h"
#include "fuzz_common.h"
#include "util/json.h"

namespace {

const vllm::json::Value& conversation() {
    static const vllm::json::Value messages = vllm::json::parse(R"([
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21.5}"},
        {"role": "assistant", "content": "It is 21.5 degrees."},
        {"role": "user", "content": "Thanks \u00e9\u4e2d!"}
    ])");
    return messages;
}

const vllm::json::Value& tools() {
    static const vllm::json::Value value = vllm::json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    ])");
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const vllm::json::Value extra = vllm::json::parse(R"({"enable_thinking": false})");
    fuzz::refusals_allowed([&] {
        const vllm::chat::ChatTemplate chat_template(std::string(fuzz::text(data, size)), "<s>", "</s>");
        (void)chat_template.render(conversation(), tools(), true, extra);
    });
    return 0;
}
