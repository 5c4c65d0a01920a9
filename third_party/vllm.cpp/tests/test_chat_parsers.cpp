// Tool-call and reasoning parser tests at the parsers' own boundary: exact
// model outputs, parsed whole and streamed in every 2-way split, one byte
// at a time and in random pieces; the streamed deltas must add up to the
// whole-output result.
//
//   test_chat_parsers [TEMPLATES_DIR]
//
// TEMPLATES_DIR (optional): the chat template fixtures; each one's detected
// tool and reasoning dialect is checked against what its markers call for.
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_request.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/forced_tool_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "util/error.h"
#include "chat_parser_checks.h"
#include "check.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

void test_hermes() {
    const std::string call = R"(<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
</tool_call>)";
    const std::string weather_args = R"({"city": "Paris", "unit": "celsius"})";
    check_tools("hermes", "one call", call, "", {{"get_weather", weather_args}});
    check_tools("hermes", "content before the call", "Let me check.\n" + call, "Let me check.\n",
                {{"get_weather", weather_args}});
    check_tools("hermes", "whitespace alone before the call is dropped", "\n\n" + call, "", {{"get_weather", weather_args}});
    check_tools("hermes", "whitespace-only output", " \n ", " \n ", {});
    check_tools("hermes", "plain text", "The weather is <b>fine</b> <tool", "The weather is <b>fine</b> <tool", {});
    check_tools("hermes", "two calls, nested and Unicode arguments",
                call + "\n" +
                    "<tool_call>{\"name\":\"translate\",\"arguments\":{\"text\":\"caf\xC3\xA9 \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x98\x80\","
                    "\"opts\":{\"tags\":[1,2.5,{\"k\":null}],\"raw\":\"</tool_call> inside\\\"quote\"}}}</tool_call>\n",
                "",
                {{"get_weather", weather_args},
                 {"translate", "{\"text\": \"caf\xC3\xA9 \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x98\x80\", "
                               "\"opts\": {\"tags\": [1, 2.5, {\"k\": null}], \"raw\": \"</tool_call> inside\\\"quote\"}}"}});
    const std::string bad = "<tool_call>\n{\"name\": \"f\", \"arguments\": {city: Paris}}\n</tool_call>";
    check_tools("hermes", "malformed JSON is content", bad, bad, {});
    const std::string no_args = "<tool_call>{\"name\": \"f\"}</tool_call>";
    check_tools("hermes", "missing arguments is content", no_args, no_args, {});
    check_tools("hermes", "valid call then malformed block", call + bad, bad, {{"get_weather", weather_args}});
    check_tools("hermes", "unclosed block with whole JSON is a call",
                "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", "", {{"f", "{}"}});
    check_tools("hermes", "unclosed truncated block is content", "Hi <tool_call>{\"name\": \"f\", \"argu",
                "Hi <tool_call>{\"name\": \"f\", \"argu", {});
    check_tools("hermes", "text after a call is dropped", call + "\nDone!", "", {{"get_weather", weather_args}});
    // Streamed, a call's name comes first (with the first key), then its arguments in pieces (vLLM's way).
    check_streams_in_pieces("hermes", dialect_parser("hermes"), call, "get_weather", "{\"city\": ", weather_args);
    check_tools("hermes", "broken after the first key: a call, its arguments as far as they were JSON",
                "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5], oops}}</tool_call>", "",
                {{"f", "{\"a\": [1, 2.5], "}});
    check_tools("hermes", "arguments first: read whole",
                "<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>", "", {{"f", "{\"a\": 1}"}});
    check_tools("hermes", "empty output", "", "", {});
}

void test_llama3_json() {
    check_tools("llama3_json", "one call with parameters",
                R"({"name": "get_weather", "parameters": {"city": "Paris"}})", "",
                {{"get_weather", R"({"city": "Paris"})"}});
    check_tools("llama3_json", "python tag, two calls separated by ';'",
                "<|python_tag|>{\"name\": \"a\", \"arguments\": {}}; {\"name\":\"b\",\"parameters\":{\"x\":1.5,\"s\":\"}{;\"}}",
                "", {{"a", "{}"}, {"b", R"({"x": 1.5, "s": "}{;"})"}});
    check_tools("llama3_json", "nested Unicode arguments",
                "\n {\"name\": \"search\", \"parameters\": {\"q\": \"\xE6\x97\xA5\xE6\x9C\xAC\", \"f\": {\"n\": [[1], {\"m\": true}]}}}",
                "", {{"search", "{\"q\": \"\xE6\x97\xA5\xE6\x9C\xAC\", \"f\": {\"n\": [[1], {\"m\": true}]}}"}});
    check_tools("llama3_json", "text first is content", R"(Sure: {"name": "a", "parameters": {}})",
                R"(Sure: {"name": "a", "parameters": {}})", {});
    check_tools("llama3_json", "plain text", "Hello <|py", "Hello <|py", {});
    check_tools("llama3_json", "malformed object is content", " {\"name\": \"a\", \"parameters\": {x}}",
                " {\"name\": \"a\", \"parameters\": {x}}", {});
    check_tools("llama3_json", "JSON that is not a call is content", R"({"answer": 42})", R"({"answer": 42})", {});
    check_tools("llama3_json", "truncated object is content", R"({"name": "a", "param)", R"({"name": "a", "param)", {});
    check_tools("llama3_json", "text after the calls is dropped", R"({"name": "a", "parameters": {}} I called it.)",
                "", {{"a", "{}"}});
    check_tools("llama3_json", "second object malformed", R"({"name": "a", "parameters": {}}; {"name": 3})",
                R"({"name": 3})", {{"a", "{}"}});
    // Streamed as hermes streams: the name with the first key, then the arguments in pieces.
    const std::string weather = R"({"city": "Paris", "days": [1, 2], "opts": {"unit": "c"}})";
    check_streams_in_pieces("llama3_json", dialect_parser("llama3_json"),
                            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": " + weather + "}", "get_weather",
                            "{\"city\": ", weather);
    check_tools("llama3_json", "broken after the first key: a call, its arguments as far as they were JSON",
                R"({"name": "f", "parameters": {"a": 1, oops}})", "", {{"f", R"({"a": 1, )"}});
    check_tools("llama3_json", "cut short after the first key: a call, its arguments as far as they were read",
                R"( {"name": "f", "arguments": {"a": "x", "b": [1, 2)", "", {{"f", R"({"a": "x", "b": [1, 2)"}});
    check_tools("llama3_json", "parameters first: read whole", R"({"parameters": {"a": 1}, "name": "f"})", "",
                {{"f", R"({"a": 1})"}});
}

void test_mistral() {
    check_tools("mistral", "JSON array of calls",
                R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "now", "arguments": {}}])",
                "", {{"get_weather", R"({"city": "Paris"})"}, {"now", "{}"}});
    check_tools("mistral", "v11 name{args} calls with content first",
                "Sure.[TOOL_CALLS]get_weather{\"city\": \"Z\xC3\xBCrich\", \"d\": {\"a\": [1, {\"b\": \"}\"}]}}[TOOL_CALLS]now[ARGS]{}",
                "Sure.",
                {{"get_weather", "{\"city\": \"Z\xC3\xBCrich\", \"d\": {\"a\": [1, {\"b\": \"}\"}]}}"}, {"now", "{}"}});
    check_tools("mistral", "whitespace before the marker is dropped", "\n [TOOL_CALLS]f{}", "", {{"f", "{}"}});
    check_tools("mistral", "plain text", "No tools needed [TOOL", "No tools needed [TOOL", {});
    check_tools("mistral", "malformed array is content", R"([TOOL_CALLS][{"name": 1, "arguments": {}}])",
                R"([{"name": 1, "arguments": {}}])", {});
    check_tools("mistral", "truncated array is content", R"([TOOL_CALLS][{"name": "f", "arguments": {"a")",
                R"([{"name": "f", "arguments": {"a")", {});
    check_tools("mistral", "v11 arguments not JSON", "[TOOL_CALLS]f{oops} and more", "f{oops} and more", {});
    check_tools("mistral", "marker followed by prose", "[TOOL_CALLS] ?what", "?what", {});
}

void test_pythonic() {
    check_tools("pythonic", "two calls",
                R"([get_weather(city='San Francisco', metric="celsius"), get_time()])", "",
                {{"get_weather", R"({"city": "San Francisco", "metric": "celsius"})"}, {"get_time", "{}"}});
    check_tools("pythonic", "literal values, nested and Unicode",
                "[f(a={'k': [1, 2.5, True, None], 2: 'two'}, b='it\\'s \xC3\xA9 \\u4e16', c=-3, d=1e3, e=[],)]", "",
                {{"f", "{\"a\": {\"k\": [1, 2.5, true, null], \"2\": \"two\"}, \"b\": \"it's \xC3\xA9 \xE4\xB8\x96\", "
                       "\"c\": -3, \"d\": 1000.0, \"e\": []}"}});
    check_tools("pythonic", "brackets inside strings", R"([f(s="a)]b", t='[(')])", "", {{"f", R"({"s": "a)]b", "t": "[("})"}});
    check_tools("pythonic", "python tags", "<|python_start|>[f(x=1)]<|python_end|>", "", {{"f", R"({"x": 1})"}});
    check_tools("pythonic", "plain text", "Hello [world](x)", "Hello [world](x)", {});
    check_tools("pythonic", "a link is content", "[world](https://x.org)", "[world](https://x.org)", {});
    check_tools("pythonic", "variable argument is content", "[f(x=y)]", "[f(x=y)]", {});
    check_tools("pythonic", "positional argument is content", " [f(1)]", " [f(1)]", {});
    check_tools("pythonic", "empty list is content", "[]", "[]", {});
    check_tools("pythonic", "truncated list is content", "[f(x='abc", "[f(x='abc", {});
}

// The calls tool_choice "required" / a named function forced (chat_constraint.h).
void test_forced_tool_calls() {
    const ParserFactory required = [](ToolParser::IdGenerator ids) {
        return std::make_unique<ForcedToolParser>("", std::move(ids));
    };
    const ParserFactory named = [](ToolParser::IdGenerator ids) {
        return std::make_unique<ForcedToolParser>("get_weather", std::move(ids));
    };
    const std::string args = "{\"city\": \"Par\xC3\xADs\", \"opts\": {\"raw\": \"} ]\\\"\", \"n\": [1, {}]}}";
    check_tools("forced", required, "required, one call", "[{\"name\": \"get_weather\", \"parameters\": " + args + "}]",
                "", {{"get_weather", args}});
    check_tools("forced", required, "required, two calls with whitespace",
                "[ {\"name\":\"ping\",\"parameters\":{}} ,\n {\"name\": \"get_weather\", \"parameters\": " + args +
                    "}\n]",
                "", {{"ping", "{}"}, {"get_weather", args}});
    check_tools("forced", required, "required, cut short", "[{\"name\": \"ping\", \"parameters\": {}}, {\"name\": \"pi",
                "{\"name\": \"pi", {{"ping", "{}"}});
    check_tools("forced", named, "named", args, "", {{"get_weather", args}});
    check_tools("forced", named, "named, leading whitespace", " \n" + args, "", {{"get_weather", args}});
    check_tools("forced", named, "named, cut short", "{\"city\": \"Pa", "{\"city\": \"Pa", {});
    // Streamed: committed once the first member is whole, then the arguments in pieces.
    check_streams_in_pieces("forced named", named, args, "get_weather", "{\"city\": \"Par\xC3\xADs\"", args);
    check_streams_in_pieces("forced required", required, "[{\"name\": \"get_weather\", \"parameters\": " + args + "}]",
                            "get_weather", "{\"city\": \"Par\xC3\xADs\"", args);
    check_tools("forced", named, "named, cut after the first member: a call as far as it was read",
                "{\"city\": \"Paris\", \"opts\": {\"n\": 1", "", {{"get_weather", "{\"city\": \"Paris\", \"opts\": {\"n\": 1"}});
    check_tools("forced", required, "required, cut after the first member",
                "[{\"name\": \"ping\", \"parameters\": {\"a\": true, \"b\"", "", {{"ping", "{\"a\": true, \"b\""}});
}

// A call of a megabyte streamed two bytes at a time: each parser reads its
// block once (a rescan from the block's start on every piece was quadratic:
// minutes of a server's time for one long call), and the call comes out whole.
void test_long_streamed_calls() {
    std::string big;
    while (big.size() < (1u << 20)) big += "ab{[( )]}";
    const std::string args = "{\"s\": \"" + big + "\"}";
    const ParserFactory named = [](ToolParser::IdGenerator ids) {
        return std::make_unique<ForcedToolParser>("f", std::move(ids));
    };
    const std::vector<std::pair<std::string, std::string>> outputs = {
        {"hermes", "<tool_call>{\"name\": \"f\", \"arguments\": " + args + "}</tool_call>"},
        {"llama3_json", "{\"name\": \"f\", \"parameters\": " + args + "}"},
        {"mistral", "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": " + args + "}]"},
        {"mistral", "[TOOL_CALLS]f[ARGS]" + args},
        {"pythonic", "[f(s='" + big + "')]"},
        {"forced", args},
    };
    for (const auto& [dialect, output] : outputs) {
        auto parser = counting_parser(dialect == "forced" ? named : dialect_parser(dialect));
        ToolParseResult streamed;
        for (size_t at = 0; at < output.size(); at += 2) accumulate(streamed, parser->feed(output.substr(at, 2)));
        accumulate(streamed, parser->finish());
        check(same(streamed, "", {{"f", args}}), dialect + ": a 1 MB call streamed in 2-byte pieces");
    }
}

void test_tool_parser_factory() {
    try {
        make_tool_parser("qwen");
        check(false, "unknown tool_parser is refused");
    } catch (const Error& e) {
        check(e.status() == VLLM_ERR_INVALID_ARGUMENT &&
                  std::string(e.what()) ==
                      "unknown tool_parser 'qwen' (known: hermes, llama3_json, mistral, pythonic, llama4_pythonic, "
                      "qwen3_coder, glm45, deepseek_v3, deepseek_v31, kimi_k2, granite, phi4_mini_json, openai)",
              std::string("unknown tool_parser message: ") + e.what());
    }
    auto is_alnum = [](const std::string& s) {
        for (char c : s)
            if (!std::isalnum(static_cast<unsigned char>(c))) return false;
        return true;
    };
    const ToolParseResult hermes = make_tool_parser("hermes")->parse_all(
        R"(<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>)");
    check(hermes.calls.size() == 2 && hermes.calls[0].id.size() == 29 && hermes.calls[0].id.rfind("call_", 0) == 0 &&
              is_alnum(hermes.calls[0].id.substr(5)) && hermes.calls[0].id != hermes.calls[1].id,
          "hermes ids are call_ + 24 alphanumerics, distinct");
    const ToolParseResult mistral = make_tool_parser("mistral")->parse_all(R"([TOOL_CALLS]a{"x": 1})");
    check(mistral.calls.size() == 1 && mistral.calls[0].id.size() == 9 && is_alnum(mistral.calls[0].id),
          "mistral ids are 9 alphanumerics");
}

// ------------------------------------------------------------ reasoning

void test_reasoning() {
    const ChatRequest& req = plain_request();
    check_reasoning("deepseek_r1", "tags in output", req, "", "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
                    "\nLet me think.\n", "\n\nThe answer is 4.");
    check_reasoning("deepseek_r1", "opening tag in the prompt", req, "<｜Assistant｜><think>\n",
                    "2+2 is 4. </thinking> no</think>Four.", "2+2 is 4. </thinking> no", "Four.");
    check_reasoning("deepseek_r1", "cut short before the end tag", req, "", "still thinking <", "still thinking <", "");
    check_reasoning("deepseek_r1", "end tag first", req, "", "</think>Just content", "", "Just content");
    check_reasoning("deepseek_r1", "tags after the end are content", req, "", "a</think>b<think>c</think>",
                    "a", "b<think>c</think>");

    check_reasoning("qwen3", "thinking on", req, "", "<think>\nhmm\n</think>\n\nHello", "\nhmm\n", "\n\nHello");
    const ChatRequest off = request_with(
        R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": false}})");
    check_reasoning("qwen3", "enable_thinking false", off, "", "Hello <think>x</think>", "", "Hello <think>x</think>");
    check_reasoning("qwen3", "empty think block in the prompt", req,
                    "<|im_start|>assistant\n<think>\n\n</think>\n\n", "Hello", "", "Hello");

    check_reasoning("mistral", "think block", req, "", "[THINK]Plan: add.[/THINK]It is 4.", "Plan: add.", "It is 4.");
    check_reasoning("mistral", "text around the block", req, "", "Hm [THINK]x[/THINK] ok", "x", "Hm  ok");
    check_reasoning("mistral", "no tags", req, "", "Plain [THIN", "", "Plain [THIN");
    check_reasoning("mistral", "stray end tag dropped", req, "", "a[/THINK]b", "", "ab");
    check_reasoning("mistral", "unclosed block", req, "", "[THINK]abc", "abc", "");
    check_reasoning("mistral", "opening tag in the prompt", req, "[INST]q[/INST][THINK]", "abc[/THINK]x", "abc", "x");

    check_reasoning("none", "no split", req, "", "<think>a</think>b", "", "<think>a</think>b");

    try {
        make_reasoning_parser("o1", req, "");
        check(false, "unknown reasoning_parser is refused");
    } catch (const Error& e) {
        check(std::string(e.what()) == "unknown reasoning_parser 'o1' (known: deepseek_r1, qwen3, mistral, none, "
                                       "openai_gptoss, glm45, granite, deepseek_v3, seed_oss)",
              std::string("unknown reasoning_parser message: ") + e.what());
    }
}

// Reasoning is split off before tool calls are parsed, streaming or whole.
void test_reasoning_then_tools() {
    const std::string output =
        "<think>The user wants weather; call <tool_call> tool.</think>\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    auto make = [] {
        auto counter = std::make_shared<int>(0);
        return ChatOutputParser(make_reasoning_parser("qwen3", plain_request(), ""),
                                make_tool_parser("hermes", [counter] { return "id" + std::to_string((*counter)++); }));
    };
    ChoiceParts whole;
    make().parse_all(output, whole);
    check(whole.reasoning == std::optional<std::string>("The user wants weather; call <tool_call> tool.") &&
              whole.content.empty() && whole.tool_calls.size() == 1 &&
              whole.tool_calls[0].name == "get_weather" && whole.tool_calls[0].arguments == R"({"city": "Oslo"})",
          "reasoning then tools, whole: reasoning=" + show(whole.reasoning.value_or("<none>")) + " content=" +
              show(whole.content));
    int mismatches = 0;
    for (const auto& pieces : streamings(output)) {
        const ChoiceParts streamed = streamed_choice(make(), pieces);
        mismatches += streamed.reasoning != whole.reasoning || streamed.content != whole.content ||
                      streamed.tool_calls.size() != 1 || streamed.tool_calls[0].arguments != whole.tool_calls[0].arguments;
    }
    check(mismatches == 0, "reasoning then tools: " + std::to_string(mismatches) + " streamings differ");

    ChoiceParts plain;
    ChatOutputParser(nullptr, nullptr).parse_all("just text", plain);
    check(plain.content == "just text" && !plain.reasoning && plain.tool_calls.empty(), "no parsers: text is content");
}

// ---------------------------------------------------------------- fuzz

// Random outputs built from the dialects' markup fragments: no parser may
// fail on them, and every streaming must give the whole-output result.
void test_random_outputs() {
    const std::vector<std::string> fragments = {
        "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "<think>", "</think>",
        "[THINK]", "[/THINK]", "{", "}", "[", "]", "(", ")", "\"", "'", "\\", ":", ",", ";", "=", " ", "\n",
        "\"name\"", "\"arguments\"", "\"parameters\"", "\"f\"", "f", "x", "1", "2.5", "true", "None",
        "\xC3\xA9", "<tool", "[TOOL", "</th", "[/TH"};
    std::mt19937 rng(99);
    int mismatches = 0;
    std::string first_bad;
    for (int round = 0; round < 400; ++round) {
        std::string output;
        const int parts = std::uniform_int_distribution<int>(1, 24)(rng);
        for (int i = 0; i < parts; ++i) output += fragments[rng() % fragments.size()];
        if (round % 3 == 0) output = "<tool_call>{\"name\": \"f\", \"arguments\": {" + output;
        if (round % 3 == 1) output = "[TOOL_CALLS]f{" + output;
        for (const char* dialect : {"hermes", "llama3_json", "mistral", "pythonic"}) {
            if (!tools_stream_as_whole(dialect_parser(dialect), output, rng) && mismatches++ == 0)
                first_bad = std::string(dialect) + " on " + show(output);
        }
        for (const char* dialect : {"deepseek_r1", "qwen3", "mistral"}) {
            if (!reasoning_streams_as_whole(dialect, output) && mismatches++ == 0)
                first_bad = std::string(dialect) + " reasoning on " + show(output);
        }
    }
    check(mismatches == 0, "random outputs: " + std::to_string(mismatches) + " streamings differ, first: " + first_bad);

    // The streamed JSON calls: random text after an opening each commits on
    // (llama3_json's, the forced calls' array and arguments object).
    const ParserFactory required = [](ToolParser::IdGenerator ids) {
        return std::make_unique<ForcedToolParser>("", std::move(ids));
    };
    const ParserFactory named = [](ToolParser::IdGenerator ids) {
        return std::make_unique<ForcedToolParser>("f", std::move(ids));
    };
    const std::vector<std::pair<std::string, ParserFactory>> streamed = {
        {"{\"name\": \"f\", \"parameters\": {\"a\": ", dialect_parser("llama3_json")},
        {"[{\"name\": \"f\", \"parameters\": {\"a\": 1, ", required},
        {"{\"a\": [1, ", named}};
    std::mt19937 streamed_rng(7);
    int streamed_mismatches = 0;
    for (int round = 0; round < 300; ++round) {
        const auto& [opening, make] = streamed[static_cast<size_t>(round) % streamed.size()];
        std::string output = opening;
        const int parts = std::uniform_int_distribution<int>(1, 16)(streamed_rng);
        for (int i = 0; i < parts; ++i) output += fragments[streamed_rng() % fragments.size()];
        if (!tools_stream_as_whole(make, output, streamed_rng) && streamed_mismatches++ == 0)
            first_bad = show(output);
    }
    check(streamed_mismatches == 0, "random streamed JSON calls: " + std::to_string(streamed_mismatches) +
                                        " streamings differ, first: " + first_bad);
}

// ------------------------------------------------------------ detection

void test_detection(const char* templates_dir) {
    check(detect_tool_parser("{{ '<tool_call>' }}") == "hermes", "detect hermes");
    check(detect_tool_parser("[TOOL_CALLS]") == "mistral", "detect mistral tools");
    check(detect_tool_parser("Respond in the format {\"name\": function name, \"parameters\": ...}") == "llama3_json",
          "detect llama3_json");
    check(detect_tool_parser("[func_name1(params_name1=params_value1)]") == "pythonic", "detect pythonic");
    check(detect_tool_parser("{{ messages }}").empty(), "no tool dialect");
    check(detect_reasoning_parser("[THINK]") == "mistral", "detect mistral reasoning");
    check(detect_reasoning_parser("<think>\n</think> enable_thinking") == "qwen3", "detect qwen3");
    check(detect_reasoning_parser("<think>\n</think>") == "deepseek_r1", "detect deepseek_r1");
    check(detect_reasoning_parser("{{ messages }}").empty(), "no reasoning dialect");
    if (templates_dir == nullptr) return;
    const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
        // Its template writes DeepSeek-V3's tool-call format.
        {"deepseek-r1-distill-qwen.jinja", "deepseek_v3", "deepseek_r1"},
        {"gemma-2-it.jinja", "", ""},
        {"gemma-3-it.jinja", "", ""},
        {"hermes-3-llama-3.1-tool-use.jinja", "hermes", ""},
        {"llama-2-chat.jinja", "", ""},
        {"llama-3.1-instruct.jinja", "llama3_json", ""},
        {"llama-3.2-instruct.jinja", "llama3_json", ""},
        {"mistral-nemo-instruct-2407.jinja", "mistral", ""},
        {"phi-3.5-mini-instruct.jinja", "", ""},
        {"qwen2.5-instruct.jinja", "hermes", ""},
        {"qwen3.jinja", "hermes", "qwen3"},
        {"smollm2-instruct.jinja", "", ""},
    };
    for (const auto& [file, tool, reasoning] : expected) {
        std::ifstream in(std::string(templates_dir) + "/" + file, std::ios::binary);
        check(in.good(), "fixture readable: " + file);
        std::stringstream source;
        source << in.rdbuf();
        check(detect_tool_parser(source.str()) == tool, file + ": tool dialect " + detect_tool_parser(source.str()));
        check(detect_reasoning_parser(source.str()) == reasoning,
              file + ": reasoning dialect " + detect_reasoning_parser(source.str()));
    }
}

}  // namespace

int main(int argc, char** argv) {
    test_hermes();
    test_llama3_json();
    test_mistral();
    test_pythonic();
    test_forced_tool_calls();
    test_long_streamed_calls();
    test_tool_parser_factory();
    test_reasoning();
    test_reasoning_then_tools();
    test_random_outputs();
    test_detection(argc > 1 ? argv[1] : nullptr);
    return report();
}
