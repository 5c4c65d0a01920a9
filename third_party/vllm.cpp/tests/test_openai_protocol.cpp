// OpenAI chat protocol tests: the request validator (every field's type and
// range errors, defaults, normalization) and the response / stream chunk
// builders.
//
//   test_openai_protocol [SAMPLES_DIR]
//
// SAMPLES_DIR (optional): where to write sample responses (completion_*.json)
// and streams (stream_*.jsonl, one chunk a line) for the Python side to
// validate with the openai package's ChatCompletion / ChatCompletionChunk.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/openai_protocol.h"
#include "util/error.h"
#include "util/json.h"
#include "check.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

const std::string kUser = R"("messages": [{"role": "user", "content": "Hi"}])";

// A request with the user message and `extra` members.
std::string with(const std::string& extra) { return "{" + kUser + (extra.empty() ? "" : ", " + extra) + "}"; }

void expect_error(const std::string& request, const std::string& message) {
    try {
        parse_chat_request(request);
        check(false, "accepted: " + request);
    } catch (const Error& e) {
        check(e.status() == VLLM_ERR_INVALID_ARGUMENT && std::string(e.what()).find(message) != std::string::npos,
              "request " + request + "\n  expected error containing: " + message + "\n  got: " + e.what());
    }
}

// ---------------------------------------------------------------- request

void test_request_fields() {
    const ChatRequest r = parse_chat_request(R"({
        "model": "smol", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "user", "content": "Weather?", "name": "ann"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "max_tokens": 10,
        "max_completion_tokens": 20, "min_tokens": 2, "stop": "END", "seed": 7, "presence_penalty": 0.1,
        "frequency_penalty": -0.2, "repetition_penalty": 1.1, "n": 3, "logprobs": true, "top_logprobs": 5,
        "priority": -2, "stream": true, "stream_options": {"include_usage": true},
        "chat_template_kwargs": {"enable_thinking": false}, "response_format": {"type": "text"},
        "user": "ignored", "metadata": {"also": "ignored"}})");
    check(r.model == "smol", "model");
    check(r.messages.size() == 5, "messages kept");
    check(r.messages.items()[1].find("content")->as_string() == "a\nb", "text parts joined with newline");
    const json::Value& args = *r.messages.items()[3].find("tool_calls")->items()[0].find("function")->find("arguments");
    check(args.is_object() && args.find("city")->as_string() == "Oslo", "tool call arguments parsed for templates");
    check(r.messages.items()[3].find("content")->as_string().empty(), "assistant null content rendered as \"\" (vLLM)");
    check(r.tools.is_array() && r.tools.size() == 1 && r.tool_choice == ToolChoice::Auto, "tools, tool_choice auto");
    const SamplingConfig& c = r.sampling;
    check(c.temperature == 0.5f && c.top_p == 0.9f && c.top_k == 40 && c.min_p == 0.05f, "sampling numbers");
    check(c.max_tokens == 20, "max_completion_tokens wins over max_tokens");
    check(c.min_tokens == 2 && c.stop == std::vector<std::string>{"END"} && c.has_seed && c.seed == 7,
          "min_tokens, stop string, seed");
    check(c.presence_penalty == 0.1f && c.frequency_penalty == -0.2f && c.repetition_penalty == 1.1f, "penalties");
    check(r.n == 3 && r.logprobs && r.top_logprobs == 5 && r.priority == -2, "n, logprobs, priority");
    check(r.stream && r.include_usage, "stream_options.include_usage");
    check(r.enable_thinking() == std::optional<bool>(false), "chat_template_kwargs.enable_thinking");

    // The same values through the C struct meet the same parser: the same config.
    vllm_sampling_params p = vllm_sampling_params_default();
    const char* stops[] = {"END"};
    p.temperature = 0.5f, p.top_p = 0.9f, p.top_k = 40, p.min_p = 0.05f, p.max_tokens = 20, p.has_seed = 1;
    p.seed = 7, p.presence_penalty = 0.1f, p.frequency_penalty = -0.2f, p.repetition_penalty = 1.1f;
    p.min_tokens = 2, p.stop = stops, p.n_stop = 1;
    const SamplingConfig from_struct = SamplingConfig::from_c(p);
    check(from_struct.temperature == c.temperature && from_struct.top_p == c.top_p && from_struct.top_k == c.top_k &&
              from_struct.min_p == c.min_p && from_struct.max_tokens == c.max_tokens && from_struct.seed == c.seed &&
              from_struct.stop == c.stop && from_struct.min_tokens == c.min_tokens &&
              from_struct.repetition_penalty == c.repetition_penalty && !from_struct.grammar &&
              from_struct.logits_processor == nullptr,
          "the struct's fields read like the body's");

    const ChatRequest d = parse_chat_request(with(""));
    check(d.sampling.temperature == 1.0f && d.sampling.top_p == 1.0f && d.sampling.top_k == 0 &&
              d.sampling.max_tokens == 0 && d.n == 1 && !d.logprobs && !d.sampling.has_seed && d.sampling.stop.empty() &&
              d.tool_choice == ToolChoice::None && d.tools.is_null() &&
              d.add_generation_prompt && !d.enable_thinking(),
          "defaults");
    const ChatRequest nulls = parse_chat_request(with(R"("temperature": null, "stop": null, "tools": null, "n": null)"));
    check(nulls.sampling.temperature == 1.0f && nulls.n == 1, "null means not given");
    check(parse_chat_request(with(R"("stop": ["a", "b"], "max_tokens": 5.0)")).sampling.stop.size() == 2, "stop list, 5.0 as int");
    check(parse_chat_request(with(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none")"))
                  .tool_choice == ToolChoice::None,
          "tool_choice none with tools");
}

// What agents send back after a tool call (issue 37): the SDKs' own message
// objects, with nulls where a field is unset, become what vLLM hands a
// template.
void test_agent_turn_messages() {
    const ChatRequest r = parse_chat_request(R"({"messages": [
        {"role": "user", "content": "Weather?", "name": null},
        {"role": "assistant", "content": null, "refusal": null, "audio": null, "function_call": null,
         "annotations": [], "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\": \"Oslo\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "w", "arguments": {"city": "Rome"}}},
            {"id": "c3", "type": "function", "function": {"name": "t", "arguments": ""}},
            {"id": "c4", "type": "function", "function": {"name": "t", "arguments": null}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2"},
        {"role": "assistant", "tool_calls": null, "reasoning": "thought"},
        {"role": "user", "content": ["plain", {"type": "input_text", "text": "typed"}, {"text": "untyped"},
                                     {"type": "refusal", "refusal": "no"}], "name": "ann"}]})");
    const auto& m = r.messages.items();
    check(m.size() == 6, "six messages");
    check(m[0].members().size() == 2 && !m[0].contains("name"), "null name dropped");
    check(m[1].find("content")->as_string().empty() && !m[1].contains("refusal") && !m[1].contains("audio") &&
              !m[1].contains("function_call") && !m[1].contains("annotations"),
          "assistant: null content is \"\", the SDK's null fields dropped");
    const auto& calls = m[1].find("tool_calls")->items();
    check(calls[0].find("function")->find("arguments")->find("city")->as_string() == "Oslo", "string arguments parsed");
    check(calls[1].find("function")->find("arguments")->find("city")->as_string() == "Rome", "object arguments kept");
    check(calls[2].find("function")->find("arguments")->is_object() &&
              calls[3].find("function")->find("arguments")->is_object() &&
              calls[3].find("function")->find("arguments")->members().empty(),
          "empty and null arguments are {}");
    check(calls[0].find("id")->as_string() == "c1" && calls[0].find("type")->as_string() == "function", "id, type kept");
    check(m[2].find("tool_call_id")->as_string() == "c1" && m[2].find("content")->as_string() == "sunny", "tool result");
    check(m[3].find("content")->as_string().empty(), "tool message without content");
    check(m[4].find("content")->as_string().empty() && !m[4].contains("tool_calls") &&
              m[4].find("reasoning_content")->as_string() == "thought" && m[4].find("reasoning")->as_string() == "thought",
          "assistant without content; null tool_calls dropped; reasoning under both names");
    check(m[5].find("content")->as_string() == "plain\ntyped\nuntyped\nno" && m[5].find("name")->as_string() == "ann",
          "text parts of every text kind joined; name kept");
}

// OpenAI's deprecated function calling, read as tools and tool_choice; its
// history (assistant function_call, role "function") as tool messages.
void test_legacy_function_calling() {
    const std::string functions = R"("functions": [{"name": "w", "parameters": {"type": "object"}}])";
    const ChatRequest named = parse_chat_request(with(functions + R"(, "function_call": {"name": "w"})"));
    check(named.tools.size() == 1 && named.tools.items()[0].find("type")->as_string() == "function" &&
              named.tool_choice == ToolChoice::Named && named.tool_choice_name == "w",
          "functions as tools, function_call {name} as a named tool_choice");
    check(parse_chat_request(with(functions)).tool_choice == ToolChoice::Auto, "functions alone: auto");
    check(parse_chat_request(with(functions + R"(, "function_call": "none")")).tool_choice == ToolChoice::None,
          "function_call none");
    const ChatRequest history = parse_chat_request(R"({"messages": [{"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "function_call": {"name": "w", "arguments": "{\"city\": \"Oslo\"}"}},
        {"role": "function", "name": "w", "content": "sunny"}]})");
    const json::Value& call = history.messages.items()[1].find("tool_calls")->items()[0];
    check(call.find("function")->find("arguments")->find("city")->as_string() == "Oslo", "function_call as a tool call");
    check(history.messages.items()[2].find("role")->as_string() == "tool" &&
              history.messages.items()[2].find("name")->as_string() == "w",
          "a function result as a tool message named by its function");
    expect_error(with(functions + R"(, "tools": [])"), "give 'tools' or the legacy 'functions', not both");
    expect_error(with(R"("function_call": "always")"), "'function_call' must be 'none', 'auto' or {\"name\": ...}");
    expect_error(with(functions + R"(, "function_call": {"name": "x"})"), "names function 'x', which is not among");
    expect_error(R"({"messages": [{"role": "function", "content": "x"}]})", "'messages[0].name' is required");
}

void test_request_errors() {
    expect_error("{\"messages\": [", "invalid JSON at line 1 column");
    expect_error("[1]", "'request' must be a JSON object (got array)");
    expect_error("{}", "'messages' is required");
    expect_error(R"({"messages": {}})", "'messages' must be an array (got object)");
    expect_error(R"({"messages": []})", "'messages' must not be empty");
    expect_error(R"({"messages": ["hi"]})", "'messages[0]' must be an object (got string)");
    expect_error(R"({"messages": [{"content": "x"}]})", "'messages[0].role' is required");
    expect_error(R"({"messages": [{"role": "bot", "content": "x"}]})",
                 "'messages[0].role' must be one of system, developer, user, assistant, tool, function (got 'bot')");
    expect_error(R"({"messages": [{"role": "user", "content": 5}]})",
                 "'messages[0].content' must be a string or an array of text parts (got int)");
    expect_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
                 "'messages[0].content[0]': image_url parts are decoded by the caller into images");
    expect_error(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                 "'messages[0].content[0].text' is required");
    expect_error(R"({"messages": [{"role": "user", "content": ["a", null]}]})",
                 "'messages[0].content[1]' must be an object (got null)");
    expect_error(R"({"messages": [{"role": "user", "content": [{"type": "refusal"}]}]})",
                 "'messages[0].content[0].refusal' is required");
    expect_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]}]})",
                 "'messages[0].tool_calls[0].function.arguments' must be a string (got int)");
    expect_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})",
                 "'messages[0].tool_calls[0].function.name' is required");
    expect_error(R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 3}]})",
                 "'messages[0].tool_call_id' must be a string (got int)");
    expect_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]})",
                 "'messages[0].tool_calls[0].function.arguments' is not valid JSON: invalid JSON at line 1 column 2");
    expect_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a"}]}]})",
                 "'messages[0].tool_calls[0].function' is required");
    expect_error(R"({"messages": [{"role": "user", "content": "x", "name": 3}]})",
                 "'messages[0].name' must be a string (got int)");
    expect_error(with(R"("model": 1)"), "'model' must be a string (got int)");

    expect_error(with(R"("temperature": "hot")"), "'temperature' must be a number (got string)");
    expect_error(with(R"("temperature": -1)"), "'temperature' must be >= 0 (got -1)");
    expect_error(with(R"("top_p": 0)"), "'top_p' must be in (0, 1] (got 0)");
    expect_error(with(R"("top_p": 1.5)"), "'top_p' must be in (0, 1] (got 1.5)");
    expect_error(with(R"("top_k": -2)"), "'top_k' must be -1, 0 (all tokens) or between 1 and 2147483647 (got -2)");
    expect_error(with(R"("top_k": 1.5)"), "'top_k' must be an integer (got float)");
    expect_error(with(R"("top_k": true)"), "'top_k' must be an integer (got bool)");
    expect_error(with(R"("min_p": 2)"), "'min_p' must be in [0, 1] (got 2)");
    expect_error(with(R"("presence_penalty": 3)"), "'presence_penalty' must be in [-2, 2] (got 3)");
    expect_error(with(R"("frequency_penalty": -2.5)"), "'frequency_penalty' must be in [-2, 2] (got -2.5)");
    expect_error(with(R"("repetition_penalty": 0)"), "'repetition_penalty' must be > 0 (got 0)");
    expect_error(with(R"("max_tokens": 0)"), "'max_tokens' must be between 1 and 2147483647 (got 0)");
    expect_error(with(R"("max_completion_tokens": "10")"), "'max_completion_tokens' must be an integer (got string)");
    expect_error(with(R"("max_tokens": 3000000000)"), "'max_tokens' must be between 1 and 2147483647 (got 3000000000)");
    expect_error(with(R"("min_tokens": -1)"), "'min_tokens' must be between 0 and 2147483647 (got -1)");
    expect_error(with(R"("min_tokens": 5, "max_tokens": 2)"), "'min_tokens' (5) must not exceed max_tokens (2)");
    expect_error(with(R"("ignore_eos": 1)"), "'ignore_eos' must be a boolean (got int)");
    expect_error(with(R"("seed": "x")"), "'seed' must be an integer (got string)");
    expect_error(with(R"("stop": 5)"), "'stop' must be a string or an array of strings (got int)");
    expect_error(with(R"("stop": ["a", 1])"), "'stop[1]' must be a string (got int)");
    expect_error(with(R"("stop": [""])"), "'stop' strings must not be empty");

    expect_error(with(R"("n": 0)"), "'n' must be between 1 and 128 (got 0)");
    expect_error(with(R"("n": 129)"), "'n' must be between 1 and 128 (got 129)");
    expect_error(with(R"("logprobs": "yes")"), "'logprobs' must be a boolean (got string)");
    expect_error(with(R"("logprobs": true, "top_logprobs": 21)"), "'top_logprobs' must be between 0 and 20 (got 21)");
    expect_error(with(R"("top_logprobs": 2)"), "'top_logprobs' needs 'logprobs' to be true");
    expect_error(with(R"("priority": 1.5)"), "'priority' must be an integer (got float)");
    expect_error(with(R"("stream": "no")"), "'stream' must be a boolean (got string)");
    expect_error(with(R"("stream_options": true)"), "'stream_options' must be an object (got bool)");
    expect_error(with(R"("stream_options": {"include_usage": "yes"})"),
                 "'stream_options.include_usage' must be a boolean (got string)");

    const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
    check(parse_chat_request(with(tools + R"(, "tool_choice": "required")")).tool_choice == ToolChoice::Required,
          "tool_choice required");
    const ChatRequest named =
        parse_chat_request(with(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})"));
    check(named.tool_choice == ToolChoice::Named && named.tool_choice_name == "f", "named tool_choice");
    expect_error(with(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})"),
                 "'tool_choice' names function 'g', which is not among 'tools'");
    expect_error(with(tools + R"(, "tool_choice": {"type": "tool"})"), "'tool_choice.type' must be 'function'");
    expect_error(with(tools + R"(, "tool_choice": "sometimes")"),
                 "'tool_choice' must be 'none', 'auto', 'required' or a named function (got 'sometimes')");
    expect_error(with(tools + R"(, "tool_choice": 1)"), "'tool_choice' must be a string (got int)");
    expect_error(with(R"("tool_choice": "auto")"), "tool_choice 'auto' needs 'tools'");
    expect_error(with(R"("tools": {})"), "'tools' must be an array (got object)");
    expect_error(with(R"("tools": [{"type": "retrieval"}])"), "'tools[0].type' must be 'function' (got 'retrieval')");
    expect_error(with(R"("tools": [{"type": "function", "function": {}}])"), "'tools[0].function.name' is required");
    expect_error(with(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}])"),
                 "'tools[0].function.parameters' must be an object (got array)");

    check(parse_chat_request(with(R"("response_format": {"type": "json_object"})")).response_format.type ==
              ResponseFormat::Type::JsonObject,
          "response_format json_object");
    const ChatRequest schema = parse_chat_request(
        with(R"("response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "integer"}}})"));
    check(schema.response_format.type == ResponseFormat::Type::JsonSchema &&
              schema.response_format.schema == R"({"type":"integer"})",
          "response_format json_schema");
    expect_error(with(R"("response_format": {"type": "yaml"})"),
                 "'response_format.type' must be 'text', 'json_object' or 'json_schema' (got 'yaml')");
    expect_error(with(R"("response_format": "json")"), "'response_format' must be an object (got string)");

    // vLLM's guided_* fields and structured_outputs.
    const ChatRequest choice = parse_chat_request(with(R"("guided_choice": ["yes", "no"])"));
    check(choice.guided.kind == GuidedOutput::Kind::Choice && choice.guided.choices.size() == 2 &&
              choice.guided.field == "guided_choice",
          "guided_choice");
    const ChatRequest json_schema = parse_chat_request(with(R"("structured_outputs": {"json": {"type": "integer"}})"));
    check(json_schema.guided.kind == GuidedOutput::Kind::JsonSchema && json_schema.guided.text == R"({"type":"integer"})" &&
              json_schema.guided.field == "structured_outputs.json",
          "structured_outputs.json as an object");
    check(parse_chat_request(with(R"("guided_json": "{\"type\": \"string\"}")")).guided.text == R"({"type": "string"})",
          "guided_json as JSON text");
    check(parse_chat_request(with(R"("structured_outputs": {"json_object": false, "regex": null})")).guided.kind ==
              GuidedOutput::Kind::None,
          "json_object false and null keys: no constraint");
    expect_error(with(R"("guided_choice": [])"), "'guided_choice' must not be empty");
    expect_error(with(R"("guided_choice": ["a", 1])"), "'guided_choice[1]' must be a string (got int)");
    expect_error(with(R"("guided_regex": 5)"), "'guided_regex' must be a string (got int)");
    expect_error(with(R"("guided_json": 5)"), "'guided_json' must be a JSON schema");
    expect_error(with(R"("guided_regex": "a", "structured_outputs": {"choice": ["b"]})"), "at most one");
    const ChatRequest kept = parse_chat_request(with(R"("guided_regex": "a", "structured_outputs": {"json_object": false})"));
    check(kept.guided.kind == GuidedOutput::Kind::Regex && kept.guided.text == "a",
          "json_object false leaves another constraint be");
    expect_error(with(R"("structured_outputs": {"structural_tag": "x"})"),
                 "'structured_outputs.structural_tag' is not supported");
    expect_error(with(R"("structured_outputs": {"json_object": "yes"})"),
                 "'structured_outputs.json_object' must be a boolean");
    expect_error(with(R"("chat_template_kwargs": [])"), "'chat_template_kwargs' must be an object (got array)");
    expect_error(with(R"("continue_final_message": true)"),
                 "'add_generation_prompt' and 'continue_final_message' cannot both be true");
}

// --------------------------------------------------------------- response

const json::Value& at(const json::Value& v, std::string_view key) {
    const json::Value* found = v.find(key);
    if (found == nullptr) throw_runtime("missing key " + std::string(key));
    return *found;
}

ChatResponseParts sample_tool_response() {
    ChatResponseParts parts;
    parts.id = make_chat_completion_id();
    parts.created = 1700000000;
    parts.model = "smollm2";
    ChoiceParts choice;
    choice.reasoning = "Need the weather.";
    choice.tool_calls = {{make_tool_call_id(), "get_weather", R"({"city": "Paris"})"}};
    choice.finish_reason = "stop";
    parts.choices.push_back(choice);
    parts.usage = {12, 30};
    return parts;
}

ChatResponseParts sample_logprob_response() {
    ChatResponseParts parts;
    parts.id = make_chat_completion_id();
    parts.created = 1700000001;
    parts.model = "smollm2";
    for (int i = 0; i < 2; ++i) {
        ChoiceParts choice;
        choice.index = i;
        choice.content = i == 0 ? "Hi \xC3\xA9" : "";
        choice.finish_reason = i == 0 ? "stop" : "length";
        choice.logprobs = std::vector<TokenLogprob>{
            {"Hi", -0.25, {{"Hi", -0.25}, {"Hello", -1.5}}},
            {" \xC3", -std::numeric_limits<double>::infinity(), {{" \xC3", -std::numeric_limits<double>::infinity()}}},
        };
        parts.choices.push_back(choice);
    }
    parts.usage = {5, 4};
    return parts;
}

// A request in the legacy function-calling API is answered in it.
void test_legacy_function_call_response() {
    ChatResponseParts parts = sample_tool_response();
    parts.legacy_function_call = true;
    const json::Value response = json::parse(build_chat_completion(parts));
    const json::Value& choice = at(response, "choices").items()[0];
    const json::Value& message = at(choice, "message");
    check(!message.contains("tool_calls") && at(at(message, "function_call"), "name").as_string() == "get_weather" &&
              at(at(message, "function_call"), "arguments").as_string() == R"({"city": "Paris"})" &&
              at(message, "content").is_null(),
          "legacy: message.function_call instead of tool_calls");
    check(at(choice, "finish_reason").as_string() == "function_call", "legacy: finish_reason function_call");

    ChatChunkWriter writer("chatcmpl-abc", 1700000002, "smollm2", /*legacy_function_call=*/true);
    ChoiceDelta calls;
    calls.tool_calls = {{0, {"call_x", "f", "{}"}}, {1, {"call_y", "g", "{}"}}};
    const json::Value delta = at(at(json::parse(writer.delta_chunk(0, calls)), "choices").items()[0], "delta");
    check(!delta.contains("tool_calls") && at(at(delta, "function_call"), "name").as_string() == "f",
          "legacy: delta.function_call, the first call");
    ChoiceDelta second_only;
    second_only.tool_calls = {{1, {"call_y", "g", "{}"}}};
    check(writer.delta_chunk(0, second_only).empty(), "legacy: a later call has nothing to send");
    check(at(at(json::parse(writer.finish_chunk(0, "stop")), "choices").items()[0], "finish_reason").as_string() ==
              "function_call",
          "legacy: streamed finish_reason function_call");
}

void test_completion_json() {
    const ChatResponseParts tool_parts = sample_tool_response();
    const json::Value tool = json::parse(build_chat_completion(tool_parts));
    check(at(tool, "id").as_string().rfind("chatcmpl-", 0) == 0 && at(tool, "id").as_string().size() == 41,
          "completion id is chatcmpl- + 32");
    check(at(tool, "object").as_string() == "chat.completion" && at(tool, "created").as_int() == 1700000000 &&
              at(tool, "model").as_string() == "smollm2",
          "completion header fields");
    const json::Value& choice = at(tool, "choices").items()[0];
    const json::Value& message = at(choice, "message");
    check(at(message, "role").as_string() == "assistant" && at(message, "content").is_null(),
          "content null beside tool calls");
    check(at(message, "reasoning_content").as_string() == "Need the weather.", "reasoning_content");
    const json::Value& call = at(message, "tool_calls").items()[0];
    check(at(call, "id").as_string().rfind("call_", 0) == 0 && at(call, "type").as_string() == "function" &&
              at(at(call, "function"), "name").as_string() == "get_weather" &&
              at(at(call, "function"), "arguments").as_string() == R"({"city": "Paris"})",
          "tool call shape");
    check(at(choice, "finish_reason").as_string() == "tool_calls", "finish_reason tool_calls");
    check(at(choice, "logprobs").is_null(), "logprobs null when not asked");
    const json::Value& usage = at(tool, "usage");
    check(at(usage, "prompt_tokens").as_int() == 12 && at(usage, "completion_tokens").as_int() == 30 &&
              at(usage, "total_tokens").as_int() == 42,
          "usage");

    const json::Value lp = json::parse(build_chat_completion(sample_logprob_response()));
    const json::Value& c0 = at(lp, "choices").items()[0];
    const json::Value& c1 = at(lp, "choices").items()[1];
    check(at(at(c0, "message"), "content").as_string() == "Hi \xC3\xA9" && !at(c0, "message").contains("tool_calls") &&
              !at(c0, "message").contains("reasoning_content"),
          "plain message fields");
    check(at(at(c1, "message"), "content").as_string().empty() && at(c1, "finish_reason").as_string() == "length" &&
              at(c1, "index").as_int() == 1,
          "second choice: empty content stays a string, length");
    const json::Value& tokens = at(at(c0, "logprobs"), "content");
    check(tokens.size() == 2 && at(tokens.items()[0], "token").as_string() == "Hi" &&
              at(tokens.items()[0], "logprob").as_double() == -0.25 &&
              at(tokens.items()[0], "bytes") == json::parse("[72, 105]") &&
              at(tokens.items()[0], "top_logprobs").size() == 2 &&
              at(at(tokens.items()[0], "top_logprobs").items()[1], "token").as_string() == "Hello",
          "logprobs entries");
    check(at(tokens.items()[1], "token").as_string() == " \xEF\xBF\xBD" &&
              at(tokens.items()[1], "bytes") == json::parse("[32, 195]") &&
              at(tokens.items()[1], "logprob").as_double() == -9999.0,
          "partial UTF-8 token shown with U+FFFD, bytes exact, -inf as -9999");
    check(!lp.contains("prompt_token_ids") && !c0.contains("token_ids"), "no token ids unless asked for");

    ChatResponseParts with_ids = sample_logprob_response();
    with_ids.prompt_token_ids = std::vector<int32_t>{1, 2};
    with_ids.choices[0].token_ids = std::vector<int32_t>{5, 6};
    with_ids.choices[1].token_ids = std::vector<int32_t>{};
    const json::Value ids = json::parse(build_chat_completion(with_ids));
    check(at(ids, "prompt_token_ids") == json::parse("[1, 2]") &&
              at(at(ids, "choices").items()[0], "token_ids") == json::parse("[5, 6]") &&
              at(at(ids, "choices").items()[1], "token_ids").size() == 0,
          "return_token_ids: the prompt's ids, each choice's (an empty choice's too)");
}

void test_chunks() {
    ChatChunkWriter writer("chatcmpl-abc", 1700000002, "smollm2");
    const json::Value role = json::parse(writer.role_chunk(0));
    check(at(role, "object").as_string() == "chat.completion.chunk" && at(role, "id").as_string() == "chatcmpl-abc",
          "chunk header");
    const json::Value& role_choice = at(role, "choices").items()[0];
    check(at(at(role_choice, "delta"), "role").as_string() == "assistant" &&
              at(at(role_choice, "delta"), "content").as_string().empty() && at(role_choice, "finish_reason").is_null(),
          "role chunk");
    check(writer.delta_chunk(0, ChoiceDelta{}).empty(), "empty delta sends nothing");
    check(!role.contains("prompt_token_ids"), "no prompt ids unless asked for");
    const std::vector<int32_t> prompt_ids = {1, 2, 3};
    check(at(json::parse(writer.role_chunk(0, &prompt_ids)), "prompt_token_ids") == json::parse("[1, 2, 3]"),
          "the first chunk carries the prompt's ids when asked for");
    ChoiceDelta held_back;  // tokens whose text is held back (a stop string's start) still send their ids
    held_back.token_ids = {7, 8};
    const json::Value ids = json::parse(writer.delta_chunk(0, held_back));
    check(at(at(ids, "choices").items()[0], "token_ids") == json::parse("[7, 8]") &&
              at(at(ids, "choices").items()[0], "delta").size() == 0,
          "a delta of ids alone is sent");
    ChoiceDelta reasoning;
    reasoning.reasoning = "hmm";
    const json::Value r = json::parse(writer.delta_chunk(0, reasoning));
    const json::Value& r_delta = at(at(r, "choices").items()[0], "delta");
    check(at(r_delta, "reasoning_content").as_string() == "hmm" && !r_delta.contains("content"), "reasoning delta");
    check(json::parse(writer.finish_chunk(0, "stop")).find("choices")->items()[0].find("finish_reason")->as_string() ==
              "stop",
          "finish without calls keeps the reason");
    ChoiceDelta calls;
    calls.tool_calls = {{0, {"call_x", "f", "{}"}}, {1, {"call_y", "g", R"({"a": 1})"}}};
    const json::Value c = json::parse(writer.delta_chunk(1, calls));
    const json::Value& streamed = at(at(at(c, "choices").items()[0], "delta"), "tool_calls");
    check(streamed.size() == 2 && at(streamed.items()[1], "index").as_int() == 1 &&
              at(streamed.items()[1], "id").as_string() == "call_y" &&
              at(at(streamed.items()[1], "function"), "arguments").as_string() == R"({"a": 1})",
          "tool call deltas carry index, id, name, arguments");
    const json::Value fin = json::parse(writer.finish_chunk(1, "stop"));
    check(at(at(fin, "choices").items()[0], "finish_reason").as_string() == "tool_calls" &&
              at(at(fin, "choices").items()[0], "delta").size() == 0,
          "finish after calls is tool_calls with an empty delta");
    const auto finish_of = [](const std::string& chunk) {
        return at(json::parse(chunk).find("choices")->items()[0], "finish_reason").as_string();
    };
    check(finish_of(writer.finish_chunk(1, "length")) == "tool_calls", "an auto tool call cut by length: tool_calls");
    check(finish_of(writer.finish_chunk(1, "length", true)) == "length", "a forced tool call cut by length: length");
    check(finish_of(writer.finish_chunk(1, "stop", true)) == "tool_calls", "a finished forced tool call: tool_calls");
    const json::Value usage = json::parse(writer.usage_chunk({3, 4}));
    check(at(usage, "choices").size() == 0 && at(at(usage, "usage"), "total_tokens").as_int() == 7, "usage chunk");
}

// reported_finish_reason, and the blocking response that uses it.
void test_finish_reasons() {
    check(reported_finish_reason("stop", false, false) == "stop" && reported_finish_reason("length", false, true) == "length",
          "no calls: the engine's reason");
    check(reported_finish_reason("stop", true, false) == "tool_calls" &&
              reported_finish_reason("length", true, false) == "tool_calls" &&
              reported_finish_reason("stop", true, true) == "tool_calls",
          "calls: tool_calls");
    check(reported_finish_reason("length", true, true) == "length", "a forced call cut short: length");
    ChatResponseParts parts;
    ChoiceParts choice;
    choice.tool_calls = {{"call_x", "f", "{}"}};
    choice.content = "{\"name\": \"f";
    choice.finish_reason = "length";
    choice.forced_tool_call = true;
    parts.choices.push_back(choice);
    const json::Value out = json::parse(build_chat_completion(parts));
    const json::Value& c = at(out, "choices").items()[0];
    check(at(c, "finish_reason").as_string() == "length" && at(at(c, "message"), "content").as_string() == "{\"name\": \"f" &&
              at(at(c, "message"), "tool_calls").size() == 1,
          "a forced call cut short keeps its complete calls, the rest as content, and says length");
}

void test_ids() {
    check(make_chat_completion_id() != make_chat_completion_id(), "completion ids differ");
    const std::string id = make_tool_call_id();
    check(id.size() == 29 && id.rfind("call_", 0) == 0, "tool call id shape");
    check(make_mistral_tool_call_id().size() == 9, "mistral tool call id length");
}

// ----------------------------------------------------------------- samples

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    check(out.good(), "wrote " + path);
}

// A stream as the engine would produce it: generated text pieces through the
// output parser into chunks.
std::string sample_stream(const std::string& reasoning_dialect, const std::string& tool_dialect,
                          const std::vector<std::string>& pieces, bool include_usage) {
    const ChatRequest request = parse_chat_request(with(""));
    ChatOutputParser parser(make_reasoning_parser(reasoning_dialect, request, ""),
                            tool_dialect.empty() ? nullptr : make_tool_parser(tool_dialect));
    ChatChunkWriter writer(make_chat_completion_id(), 1700000003, "smollm2");
    std::string lines = writer.role_chunk(0) + "\n";
    auto send = [&](const ChoiceDelta& d) {
        const std::string chunk = writer.delta_chunk(0, d);
        if (!chunk.empty()) lines += chunk + "\n";
    };
    for (const std::string& piece : pieces) send(parser.feed(piece));
    send(parser.finish());
    lines += writer.finish_chunk(0, "stop") + "\n";
    if (include_usage) lines += writer.usage_chunk({10, static_cast<int64_t>(pieces.size())}) + "\n";
    return lines;
}

void write_samples(const std::string& dir) {
    write_file(dir + "/completion_tools.json", build_chat_completion(sample_tool_response()));
    write_file(dir + "/completion_logprobs.json", build_chat_completion(sample_logprob_response()));
    ChatResponseParts plain;
    plain.id = make_chat_completion_id();
    plain.created = 1700000004;
    plain.model = "smollm2";
    ChatOutputParser(make_reasoning_parser("deepseek_r1", parse_chat_request(with("")), ""), nullptr)
        .parse_all("Think.</think>Answer.", plain.choices.emplace_back());
    write_file(dir + "/completion_reasoning.json", build_chat_completion(plain));
    write_file(dir + "/stream_reasoning_tools.jsonl",
               sample_stream("qwen3", "hermes",
                             {"<thi", "nk>Weather", " needed.</th", "ink>\n<tool", "_call>\n{\"name\": \"get_weather\", ",
                              "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
                             true));
    write_file(dir + "/stream_content.jsonl", sample_stream("none", "", {"Hel", "lo ", "w\xC3\xB6rld"}, false));
}

}  // namespace

int main(int argc, char** argv) {
    try {
        test_request_fields();
        test_agent_turn_messages();
        test_legacy_function_calling();
        test_request_errors();
        test_completion_json();
        test_legacy_function_call_response();
        test_chunks();
        test_finish_reasons();
        test_ids();
        if (argc > 1) write_samples(argv[1]);
    } catch (const std::exception& e) {
        check(false, std::string("unexpected exception: ") + e.what());
    }
    return report();
}
