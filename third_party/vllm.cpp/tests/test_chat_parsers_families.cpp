// The tool-call and reasoning parsers of today's model families (issue 42):
// qwen3_coder, glm45, deepseek_v3/v31, kimi_k2, granite, phi4_mini_json,
// llama4_pythonic, openai (gpt-oss harmony) and the reasoning parsers
// openai_gptoss, glm45, granite, deepseek_v3, seed_oss. Each sample is the
// markup the family's chat template or model card shows; every one is
// parsed whole and streamed in every 2-way split, byte by byte and in
// random pieces (chat_parser_checks.h), and the results must agree.
#include <random>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/harmony_messages.h"
#include "chat_parser_checks.h"
#include "util/error.h"
#include "check.h"

using namespace vllm_test;

namespace {

// Tools as a request declares them (the types qwen3_coder and glm45 convert by).
const json::Value& weather_tools() {
    static const json::Value tools = json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "celsius": {"type": "boolean"},
        "threshold": {"type": "number"}, "hours": {"type": "array", "items": {"type": "integer"}},
        "options": {"type": "object"}, "note": {"type": ["string", "null"]}, "code": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
    ])");
    return tools;
}

ParserFactory with_tools(const std::string& dialect) {
    return [dialect](ToolParser::IdGenerator ids) { return make_tool_parser(dialect, std::move(ids), weather_tools()); };
}

void test_qwen3_coder() {
    const ParserFactory qwen = with_tools("qwen3_coder");
    // Qwen3-Coder's template renders a call so (one newline around each value).
    const std::string call =
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    const std::string args = R"({"city": "San Francisco", "days": 3})";
    check_tools("qwen3_coder", qwen, "one call, typed by the schema", call, "", {{"get_weather", args}});
    check_tools("qwen3_coder", qwen, "content before (Qwen3.5 / 3.6 form)", "I'll check the weather.\n\n" + call,
                "I'll check the weather.\n\n", {{"get_weather", args}});
    check_tools("qwen3_coder", qwen, "two calls in one block, text after dropped",
                "<tool_call>\n<function=get_time>\n</function>\n<function=get_weather>\n<parameter=city>\n"
                "Z\xC3\xBCrich\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n"
                "</function>\n</tool_call>\nDone.",
                "", {{"get_time", "{}"}, {"get_weather", "{\"city\": \"Z\xC3\xBCrich\"}"}, {"get_time", "{}"}});
    check_tools("qwen3_coder", qwen, "every type",
                "<tool_call>\n<function=get_weather>\n<parameter=celsius>\nTrue\n</parameter>\n"
                "<parameter=threshold>\n2.5\n</parameter>\n<parameter=days>\n1_000\n</parameter>\n"
                "<parameter=hours>\n[1, 2]\n</parameter>\n<parameter=options>\n{'a': None}\n</parameter>\n"
                "<parameter=note>\nNULL\n</parameter>\n<parameter=code>\n  x = 1\n\n</parameter>\n"
                "<parameter=extra>\n42\n</parameter>\n</function>\n</tool_call>",
                "", {{"get_weather", R"({"celsius": true, "threshold": 2.5, "days": 1000, "hours": [1, 2], )"
                                     R"("options": {"a": null}, "note": null, "code": "  x = 1\n", "extra": "42"})"}});
    check_tools("qwen3_coder", qwen, "values that do not read as their type stay strings",
                "<tool_call><function=get_weather><parameter=days>three</parameter><parameter=threshold>4.0"
                "</parameter><parameter=hours>[1,</parameter></function></tool_call>",
                "", {{"get_weather", R"({"days": "three", "threshold": 4, "hours": "[1,"})"}});
    check_tools("qwen3_coder", qwen, "missing </parameter> ends at the next one",
                "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n<parameter=days>\n2\n</function>\n</tool_call>",
                "", {{"get_weather", R"({"city": "Oslo", "days": 2})"}});
    check_tools("qwen3_coder", qwen, "an undeclared tool's values are strings",
                "<tool_call>\n<function=lookup>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>", "",
                {{"lookup", R"({"n": "5"})"}});
    check_tools("qwen3_coder", qwen, "a bare function without <tool_call>",
                "Sure. <function=get_time>\n</function>", "Sure. ", {{"get_time", "{}"}});
    check_tools("qwen3_coder", qwen, "the output ends after </function>",
                "<tool_call>\n<function=get_time>\n</function>\n", "", {{"get_time", "{}"}});
    const std::string cut = "Hi <tool_call>\n<function=get_weather>\n<parameter=city>\nPar";
    check_tools("qwen3_coder", qwen, "a call cut short is content", cut, cut, {});
    const std::string nameless = "<tool_call>\n<function get_weather>\n</function>\n</tool_call>";
    check_tools("qwen3_coder", qwen, "malformed function tag is content", nameless, nameless, {});
    const std::string hermes = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
    check_tools("qwen3_coder", qwen, "hermes JSON is content", hermes, hermes, {});
    check_tools("qwen3_coder", qwen, "plain text", "a < b and <tool", "a < b and <tool", {});
    // Streamed as vLLM streams it: the name with '{' and the first parameter, each further one, then '}'.
    check_streams_in_pieces("qwen3_coder", qwen, call, "get_weather", "{\"city\": \"San Francisco\"", args, 1);
    check_streams_in_pieces("qwen3_coder bare function", qwen,
                            "<function=get_weather><parameter=days>2</parameter><parameter=city>Oslo</parameter>"
                            "<parameter=celsius>true</parameter></function>",
                            "get_weather", "{\"days\": 2", R"({"days": 2, "city": "Oslo", "celsius": true})", 2);
    check_tools("qwen3_coder", qwen, "cut short after a parameter: the ones that completed",
                "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n2",
                "", {{"get_weather", R"({"city": "Oslo"})"}});
    check_tools("qwen3_coder", qwen, "malformed after a committed call: the rest dropped",
                "<tool_call>\n<function=get_time>\n</function>\n<function=get_weather>\n<parameter=city\nX>\n"
                "</function>\n</tool_call>",
                "", {{"get_time", "{}"}});
    check_tools("qwen3_coder", qwen, "a closed block without </function> ends the function",
                "<tool_call><function=get_weather><parameter=days>4</tool_call>", "", {{"get_weather", R"({"days": 4})"}});
}

void test_glm45() {
    const ParserFactory glm = with_tools("glm45");
    // GLM-4.5's template renders a call so.
    check_tools("glm45", glm, "one call",
                "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
                "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
                "", {{"get_weather", R"({"city": "Beijing", "days": 2})"}});
    check_tools("glm45", glm, "content first, GLM-4.7's form without newlines, two calls",
                "Let me look.\n<tool_call>get_weather<arg_key>code</arg_key><arg_value>123</arg_value>"
                "<arg_key>hours</arg_key><arg_value>[1, 2]</arg_value></tool_call>\n<tool_call>get_time\n</tool_call>",
                "Let me look.\n", {{"get_weather", R"({"code": "123", "hours": [1, 2]})"}, {"get_time", "{}"}});
    check_tools("glm45", glm, "values without a declared string type read as JSON, then Python",
                "<tool_call>lookup\n<arg_key>a</arg_key>\n<arg_value>{\\\"k\\\": 1}</arg_value>\n<arg_key>b</arg_key>"
                "<arg_value>{'x': True}</arg_value><arg_key>c</arg_key><arg_value>plain words</arg_value>\n</tool_call>",
                "", {{"lookup", R"({"a": {"k": 1}, "b": {"x": true}, "c": "plain words"})"}});
    const std::string json_body = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
    check_tools("glm45", glm, "hermes JSON is content", json_body, json_body, {});
    const std::string open_key = "<tool_call>f\n<arg_key>a</arg_key>\n</tool_call>";
    check_tools("glm45", glm, "a key without a value is content", open_key, open_key, {});
    const std::string cut = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beij";
    check_tools("glm45", glm, "a call cut short is content", cut, cut, {});
}

void test_deepseek() {
    // DeepSeek-V3's template: the type, the name, and the arguments fenced as JSON.
    check_tools("deepseek_v3", "two calls",
                "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
                "{\"location\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n"
                "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                "Checking.", {{"get_weather", R"({"location": "Tokyo"})"}, {"get_time", "{}"}});
    check_tools("deepseek_v3", "the output ends without the section's end",
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": [1]}\n```<｜tool▁call▁end｜>",
                "", {{"f", R"({"a": [1]})"}});
    const std::string bad = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n{\"a\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    check_tools("deepseek_v3", "arguments without the fence are content", bad, bad, {});
    // DeepSeek-V3.1's template: the name, then the arguments bare.
    check_tools("deepseek_v31", "two calls",
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"\xE6\x9D\xB1\xE4\xBA\xAC\"}"
                "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                "", {{"get_weather", "{\"location\": \"\xE6\x9D\xB1\xE4\xBA\xAC\"}"}, {"get_time", "{}"}});
    const std::string cut = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"loc";
    check_tools("deepseek_v31", "a call cut short is content", cut, cut, {});
    const std::string junk = "<｜tool▁calls▁begin｜>oops<｜tool▁calls▁end｜> then";
    check_tools("deepseek_v31", "a section without calls is content", junk, junk, {});
    check_tools("deepseek_v31", "plain text", "No call <｜tool", "No call <｜tool", {});
}

void test_kimi_k2() {
    // Kimi-K2's template; the ids are the model's own.
    check_tools("kimi_k2", dialect_parser("kimi_k2"), "two calls",
                "Let me check.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
                "<|tool_call_argument_begin|>{\"city\": \"Beijing\"}<|tool_call_end|>\n<|tool_call_begin|>"
                "functions.get_time:1 <|tool_call_argument_begin|> {}<|tool_call_end|><|tool_calls_section_end|>",
                "Let me check.", {{"get_weather", R"({"city": "Beijing"})"}, {"get_time", "{}"}},
                {"functions.get_weather:0", "functions.get_time:1"});
    check_tools("kimi_k2", dialect_parser("kimi_k2"), "the singular section tokens",
                "<|tool_call_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}"
                "<|tool_call_end|><|tool_call_section_end|>",
                "", {{"f", "{}"}}, {"functions.f:0"});
    const std::string bad = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{x}"
                            "<|tool_call_end|><|tool_calls_section_end|>";
    check_tools("kimi_k2", "malformed arguments are content", bad, bad, {});
}

void test_json_lists() {
    // Granite 3.0's and 3.1's markers.
    check_tools("granite", "3.0 marker",
                R"(<|tool_call|>[{"arguments": {"city": "Boston"}, "name": "get_current_weather"}])", "",
                {{"get_current_weather", R"({"city": "Boston"})"}});
    check_tools("granite", "3.1 marker, two calls, text after dropped",
                " <tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": [1]}}] ok", "",
                {{"a", "{}"}, {"b", R"({"x": [1]})"}});
    check_tools("granite", "a bare list", R"([{"name": "a", "arguments": {"q": "]"}}])", "", {{"a", R"({"q": "]"})"}});
    check_tools("granite", "text first is content", R"(Sure <|tool_call|>[{"name": "a", "arguments": {}}])",
                R"(Sure <|tool_call|>[{"name": "a", "arguments": {}}])", {});
    check_tools("granite", "a list that is not calls is content", "<|tool_call|>[1, 2] and more",
                "<|tool_call|>[1, 2] and more", {});
    check_tools("granite", "cut short is content", "<|tool_call|>[{\"name\": \"a\"", "<|tool_call|>[{\"name\": \"a\"", {});
    check_tools("granite", "plain text", "<|tool", "<|tool", {});
    // Phi-4-mini's functools list.
    check_tools("phi4_mini_json", "one call",
                R"(functools[{"name": "get_weather", "arguments": {"city": "Paris"}}])", "",
                {{"get_weather", R"({"city": "Paris"})"}});
    check_tools("phi4_mini_json", "content first, parameters, no arguments",
                "I will call. functools[{\"name\": \"a\", \"parameters\": {\"n\": 1}}, {\"name\": \"b\"}]", "I will call. ",
                {{"a", R"({"n": 1})"}, {"b", "{}"}});
    check_tools("phi4_mini_json", "malformed list is content", "functools[{\"name\": 1}] x", "functools[{\"name\": 1}] x", {});
    check_tools("phi4_mini_json", "plain text", "the functools module", "the functools module", {});
    // Llama 4's pythonic calls in its python tags.
    check_tools("llama4_pythonic", "python tags",
                "<|python_start|>[get_weather(city=\"Paris\", days=2), get_time()]<|python_end|>", "",
                {{"get_weather", R"({"city": "Paris", "days": 2})"}, {"get_time", "{}"}});
}

void test_harmony_tools() {
    // OpenAI's harmony guide: analysis, then the call (its <|call|> is the
    // end token, not in the text).
    const std::string call =
        "<|channel|>analysis<|message|>User asks for the weather in Tokyo. Use get_weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        "{\"location\":\"Tokyo\"}";
    check_tools("openai", "analysis then a call", call, "", {{"get_weather", R"({"location": "Tokyo"})"}});
    check_tools("openai", "the recipient before the channel (the template's form), with <|call|>",
                "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Oslo\"}<|call|>",
                "", {{"get_weather", R"({"city": "Oslo"})"}});
    check_tools("openai", "a preamble, then a call",
                "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary "
                "to=functions.get_time <|constrain|>json<|message|>{}",
                "Let me check.", {{"get_time", "{}"}});
    check_tools("openai", "two calls",
                "<|channel|>commentary to=functions.a <|constrain|>json<|message|>{\"x\": 1}<|call|>"
                "<|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{\"y\": [true]}<|call|>",
                "", {{"a", R"({"x": 1})"}, {"b", R"({"y": [true]})"}});
    check_tools("openai", "a final answer is content",
                "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
                "2 + 2 = 4.", {});
    check_tools("openai", "plain text is content", "Hello <|chan", "Hello <|chan", {});
    const std::string cut = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\": ";
    check_tools("openai", "arguments cut short are content", cut, cut, {});
    const std::string builtin = "<|channel|>analysis to=browser.search <|constrain|>json<|message|>{\"query\": \"x\"}";
    check_tools("openai", "a built-in tool's call is content", builtin, builtin, {});
    check_tools("openai", "a header that never ends is content", "<|start|>assistant<|channel|>fin",
                "<|start|>assistant<|channel|>fin", {});
}

// ------------------------------------------------------------ reasoning

void test_family_reasoning() {
    const ChatRequest& req = plain_request();
    // gpt-oss: analysis is reasoning, final is content, a call stays markup for the tool parser.
    check_reasoning("openai_gptoss", "analysis then final", req, "<|start|>assistant",
                    "<|channel|>analysis<|message|>The user greets.<|end|><|start|>assistant<|channel|>final"
                    "<|message|>Hello! How can I help?",
                    "The user greets.", "Hello! How can I help?");
    const std::string call_markup =
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}";
    check_reasoning("openai_gptoss", "a call stays in its markup", req, "",
                    "<|channel|>analysis<|message|>Need f.<|end|>" + call_markup, "Need f.", call_markup);
    check_reasoning("openai_gptoss", "no markup at all", req, "", "plain <|", "", "plain <|");

    check_reasoning("glm45", "think block", req, "[gMASK]<sop><|user|>\nhi<|assistant|>",
                    "<think>Greeting.</think>\nHello!", "Greeting.", "\nHello!");
    check_reasoning("glm45", "thinking off (the prompt closed the block)", req, "<|assistant|>\n<think></think>",
                    "Hello </think>", "", "Hello </think>");
    check_reasoning("glm45", "the prompt opened the block", req, "<|assistant|><think>", "a</think>b", "a", "b");

    check_reasoning("granite", "thought and response", req, "",
                    "Here is my thought process:\nAdd them.\nHere is my response:\n4", "\nAdd them.\n", "\n4");
    check_reasoning("granite", "Here's", req, "", "Here's my thought process: x Here's my response: y", " x ", " y");
    check_reasoning("granite", "a response marker alone is content", req, "", "Here is my response: hi",
                    "", "Here is my response: hi");
    // Granite 3.3 thinks between <think></think> when asked, and answers plainly otherwise.
    check_reasoning("granite", "3.3's think tags and response wrapper", req, "",
                    "<think>Add them.</think>\n<response>4 </response>\n", "Add them.", "4 ");
    check_reasoning("granite", "3.3's wrapper without thinking", req, "", " <response>a </respon b</response>",
                    "", "a </respon b");
    check_reasoning("granite", "a closing tag inside the answer stays", req, "", "<response>x</response> y",
                    "", "x</response> y");
    check_reasoning("granite", "no wrapper: unchanged", req, "", "<resp x </response>", "", "<resp x </response>");
    check_reasoning("granite", "3.3 without thinking: all content", req, "", "<|tool_call|>[{\"name\": \"f\"}]",
                    "", "<|tool_call|>[{\"name\": \"f\"}]");
    check_reasoning("granite", "3.3, a stray </think> is content", req, "", "a </think> b", "", "a </think> b");

    const ChatRequest thinking = request_with(
        R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"thinking": true}})");
    check_reasoning("deepseek_v3", "thinking on", thinking, "<｜Assistant｜><think>", "Plan.</think>Answer.", "Plan.",
                    "Answer.");
    check_reasoning("deepseek_v3", "thinking off", req, "<｜Assistant｜></think>", "Answer.</think>", "", "Answer.</think>");

    check_reasoning("seed_oss", "think block", req, "", "<seed:think>Plan.</seed:think>Answer.", "Plan.", "Answer.");
    check_reasoning("seed_oss", "cut short", req, "", "<seed:think>Pla", "Pla", "");
}

// gpt-oss as served: openai_gptoss splits the reasoning off, then `openai` reads the call.
void test_harmony_output() {
    const std::string output =
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant to=functions.get_weather"
        "<|channel|>commentary json<|message|>{\"city\": \"Paris\"}";
    auto make = [] {
        auto counter = std::make_shared<int>(0);
        return ChatOutputParser(make_reasoning_parser("openai_gptoss", plain_request(), ""),
                                make_tool_parser("openai", [counter] { return "id" + std::to_string((*counter)++); }));
    };
    int mismatches = 0;
    for (const auto& pieces : streamings(output)) {
        const ChoiceParts streamed = streamed_choice(make(), pieces);
        mismatches += streamed.reasoning != std::optional<std::string>("Need the weather.") || !streamed.content.empty() ||
                      streamed.tool_calls.size() != 1 || streamed.tool_calls[0].name != "get_weather" ||
                      streamed.tool_calls[0].arguments != R"({"city": "Paris"})";
    }
    check(mismatches == 0, "gpt-oss reasoning then call: " + std::to_string(mismatches) + " streamings differ");
    ChoiceParts final_answer;
    make().parse_all("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Four.",
                     final_answer);
    check(final_answer.reasoning == std::optional<std::string>("Easy.") && final_answer.content == "Four." &&
              final_answer.tool_calls.empty(),
          "gpt-oss reasoning then final answer: content=" + show(final_answer.content));
    const HarmonyHeader header = parse_harmony_header(
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>");
    check(header.channel == "commentary" && header.recipient == "functions.get_weather" && header.content_type == "json",
          "harmony header fields");
}

// Random outputs from the new dialects' markup: no parser fails, and every
// streaming equals the whole-output result.
void test_random_family_outputs() {
    const std::vector<std::string> fragments = {
        "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", ">", "\n",
        "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "```json", "```", "<|tool_calls_section_begin|>",
        "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>",
        "functions.f:0", "<|tool_call|>", "functools[", "<|start|>", "assistant", "<|channel|>", "analysis", "final",
        "commentary", " to=functions.f", "<|constrain|>", "json", "<|message|>", "<|end|>", "<|call|>", "<think>",
        "</think>", "<seed:think>", "</seed:think>", "Here is my thought process:", "Here is my response:", "{", "}",
        "[", "]", "\"", "'", ":", ",", " ", "\"name\"", "\"arguments\"", "\"f\"", "f", "x", "1", "2.5", "true", "None",
        "\xC3\xA9", "<|", "<｜tool", "<tool", "<func", "<|chan", "<response>", "</response>", "</resp"};
    const std::vector<std::string> tool_dialects = {"qwen3_coder", "glm45", "deepseek_v3", "deepseek_v31", "kimi_k2",
                                                    "granite", "phi4_mini_json", "llama4_pythonic", "openai"};
    const std::vector<std::string> reasoning_dialects = {"openai_gptoss", "glm45", "granite", "deepseek_v3", "seed_oss"};
    std::mt19937 rng(4242);
    int mismatches = 0;
    std::string first_bad;
    for (int round = 0; round < 400; ++round) {
        std::string output;
        const int parts = std::uniform_int_distribution<int>(1, 28)(rng);
        for (int i = 0; i < parts; ++i) output += fragments[rng() % fragments.size()];
        for (const std::string& dialect : tool_dialects) {
            if (!tools_stream_as_whole(with_tools(dialect), output, rng) && mismatches++ == 0)
                first_bad = dialect + " on " + show(output);
        }
        for (const std::string& dialect : reasoning_dialects) {
            if (!reasoning_streams_as_whole(dialect, output) && mismatches++ == 0)
                first_bad = dialect + " reasoning on " + show(output);
        }
    }
    check(mismatches == 0, "random family outputs: " + std::to_string(mismatches) + " streamings differ, first: " + first_bad);
}

// A call of a megabyte streamed two bytes at a time comes out whole (each
// block is searched once, not once per piece).
void test_long_family_calls() {
    std::string big;
    while (big.size() < (1u << 20)) big += "ab{[( )]}<x";
    const std::vector<std::pair<std::string, std::string>> outputs = {
        {"qwen3_coder", "<tool_call>\n<function=f>\n<parameter=s>\n" + big + "\n</parameter>\n</function>\n</tool_call>"},
        {"glm45", "<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>" + big + "</arg_value>\n</tool_call>"},
        {"openai", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"s\": \"" + big + "\"}"},
        {"deepseek_v31", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"s\": \"" + big +
                             "\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
    };
    json::Value expected = json::Value::object();
    expected.set("s", big);
    const std::string args = json::dump(expected, {-1, true, false});
    for (const auto& [dialect, output] : outputs) {
        auto parser = counting_parser(with_tools(dialect));
        ToolParseResult streamed;
        for (size_t at = 0; at < output.size(); at += 2) accumulate(streamed, parser->feed(output.substr(at, 2)));
        accumulate(streamed, parser->finish());
        check(same(streamed, "", {{"f", args}}), dialect + ": a 1 MB call streamed in 2-byte pieces");
    }
}

void test_family_detection() {
    check(detect_tool_parser("<|start|>assistant<|channel|>commentary to=functions.x") == "openai", "detect openai");
    check(detect_tool_parser("<tool_call>\n<function={{ name }}>\n<parameter=") == "qwen3_coder", "detect qwen3_coder");
    check(detect_tool_parser("<tool_call>{{ tc.name }}<arg_key>") == "glm45", "detect glm45");
    check(detect_tool_parser("<｜tool▁calls▁begin｜> ```json") == "deepseek_v3", "detect deepseek_v3");
    check(detect_tool_parser("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>") == "deepseek_v31", "detect deepseek_v31");
    check(detect_tool_parser("<|tool_calls_section_begin|>") == "kimi_k2", "detect kimi_k2");
    check(detect_tool_parser("<|tool_call|>") == "granite", "detect granite");
    check(detect_tool_parser("<|tool|>{{ tools }}<|/tool|>") == "phi4_mini_json", "detect phi4_mini_json");
    check(detect_tool_parser("<|header_start|> [func_name1(params_name1=") == "llama4_pythonic", "detect llama4_pythonic");
    check(detect_reasoning_parser("<|channel|>analysis") == "openai_gptoss", "detect openai_gptoss");
    check(detect_reasoning_parser("<|assistant|>{{ '<think></think>' }}") == "glm45", "detect glm45 reasoning");
    check(detect_reasoning_parser("<seed:think>") == "seed_oss", "detect seed_oss");
    check(detect_reasoning_parser("Here is my thought process:") == "granite", "detect granite reasoning");
    check(detect_reasoning_parser("<|tool_call|> ... <think></think> ... <response></response>") == "granite",
          "detect Granite 3.3's reasoning");
    check(detect_reasoning_parser("{% if thinking is defined %}<think></think><｜tool▁calls▁begin｜>") == "deepseek_v3",
          "detect deepseek_v3 reasoning");
    check(tool_parser_reads_special_tokens("openai") && !tool_parser_reads_special_tokens("hermes") &&
              reasoning_parser_reads_special_tokens("openai_gptoss") && reasoning_parser_reads_special_tokens("glm45") &&
              !reasoning_parser_reads_special_tokens("qwen3"),
          "the dialects whose markers are special tokens");
}

}  // namespace

int main() {
    test_qwen3_coder();
    test_glm45();
    test_deepseek();
    test_kimi_k2();
    test_json_lists();
    test_harmony_tools();
    test_family_reasoning();
    test_harmony_output();
    test_random_family_outputs();
    test_long_family_calls();
    test_family_detection();
    return report();
}
