// The tool-call and reasoning parsers against the real chat templates of
// their model families (llama.cpp's collection, copied into the project's
// tests/fixtures/llama_cpp_templates/ with their origin noted): each
// template is detected as its family's dialects, and an assistant turn with
// reasoning and two tool calls, rendered by our template renderer after the
// generation prompt, is read back by those parsers as the same reasoning
// and calls. What the template writes for that turn is what the model was
// trained to generate, so a marker we wrote from documentation that differs
// from the template's shows here.
//
// Usage: test_chat_templates_real TEMPLATES_DIR (without it nothing is checked)
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "check.h"
#include "util/error.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

struct Case {
    std::string file;
    std::string tool_parser;       // detected from the template (and vLLM's name for the family)
    std::string reasoning_parser;  // "" : the family has none we detect
    std::string kwargs;            // chat_template_kwargs that turn thinking on
    bool renders = true;           // false: only the detection can be checked (see the case)
    // For a template that renders an assistant turn's content only (no
    // tool_calls: Granite 3.3, Phi-4-mini): the turn as the model writes it,
    // in the format the template's own instructions (or the model card) ask
    // for, rendered as the turn's content.
    std::string written_turn;
};

constexpr const char* kReasoning = "The user wants the weather; I will call the tools.";

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                  "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "description": "The time in a city.",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
])";

const char* kAssistantTurn = R"({"role": "assistant", "content": "", "reasoning_content": "The user wants the weather; I will call the tools.",
  "tool_calls": [
    {"id": "functions.get_weather:0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}},
    {"id": "functions.get_time:1", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Rome\"}"}}
  ]})";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string chat_body(const std::string& messages, const std::string& kwargs) {
    return R"({"messages": )" + messages + R"(, "tools": )" + kTools +
           (kwargs.empty() ? std::string() : R"(, "chat_template_kwargs": )" + kwargs) + "}";
}

std::string trimmed(std::string s) {
    const size_t begin = s.find_first_not_of(" \n");
    if (begin == std::string::npos) return "";
    return s.substr(begin, s.find_last_not_of(" \n") - begin + 1);
}

void check_template(const std::string& dir, const Case& c) {
    const std::string source = read_file(dir + "/" + c.file);
    check(!source.empty(), c.file + ": readable");
    if (source.empty()) return;
    check(detect_tool_parser(source) == c.tool_parser,
          c.file + ": tool dialect detected as '" + detect_tool_parser(source) + "', expected '" + c.tool_parser + "'");
    check(detect_reasoning_parser(source) == c.reasoning_parser,
          c.file + ": reasoning dialect detected as '" + detect_reasoning_parser(source) + "', expected '" +
              c.reasoning_parser + "'");
    if (!c.renders) return;

    const std::string user = R"([{"role": "user", "content": "Weather in Paris and the time in Rome?"}])";
    const ChatRequest asked = parse_chat_request(chat_body(user, c.kwargs));
    json::Value written = json::Value::object();
    written.set("role", "assistant");
    written.set("content", c.written_turn);
    const std::string turn = c.written_turn.empty() ? std::string(kAssistantTurn) : json::dump(written);
    const ChatRequest answered =
        parse_chat_request(chat_body(user.substr(0, user.size() - 1) + ", " + turn + "]", c.kwargs));
    std::string prompt, whole;
    try {
        const ChatTemplate chat_template(source, "<s>", "</s>");
        prompt = chat_template.render(asked.messages, asked.tools, true, asked.chat_template_kwargs);
        whole = chat_template.render(answered.messages, answered.tools, false, answered.chat_template_kwargs);
    } catch (const Error& e) {
        check(false, c.file + ": renders: " + e.what());
        return;
    }
    // The turn the model generates follows its generation prompt.
    const bool extends = whole.compare(0, prompt.size(), prompt) == 0;
    check(extends, c.file + ": the answered conversation does not start with the generation prompt:\n" + prompt +
                       "\n---\n" + whole);
    if (!extends) return;
    std::string output = whole.substr(prompt.size());
    // What follows the turn's content is the template's end of turn (the
    // model's stop token), not part of what it generates.
    if (!c.written_turn.empty()) {
        const size_t at = output.find(c.written_turn);
        check(at != std::string::npos, c.file + ": the written turn is rendered as it is");
        if (at == std::string::npos) return;
        output = output.substr(0, at + c.written_turn.size());
    }

    std::unique_ptr<ReasoningParser> reasoning;
    if (!c.reasoning_parser.empty()) reasoning = make_reasoning_parser(c.reasoning_parser, asked, prompt);
    int next_id = 0;
    ChatOutputParser parser(std::move(reasoning),
                            make_tool_parser(c.tool_parser, [&] { return "id" + std::to_string(next_id++); },
                                             asked.tools));
    ChoiceParts parts;
    parser.parse_all(output, parts);
    const std::string shown = c.file + " (output " + json::dump(json::Value(output)) + ")";
    // gpt-oss's template renders a turn's first call only.
    const size_t rendered_calls = output.find("get_time") == std::string::npos ? 1 : 2;
    check(parts.tool_calls.size() == rendered_calls,
          shown + ": " + std::to_string(parts.tool_calls.size()) + " calls read, " + std::to_string(rendered_calls) +
              " rendered");
    if (parts.tool_calls.size() == rendered_calls) {
        check(parts.tool_calls[0].name == "get_weather" &&
                  json::parse(parts.tool_calls[0].arguments) == json::parse(R"({"city": "Paris", "days": 3})"),
              shown + ": first call " + parts.tool_calls[0].name + " " + parts.tool_calls[0].arguments);
        if (rendered_calls == 2)
            check(parts.tool_calls[1].name == "get_time" &&
                      json::parse(parts.tool_calls[1].arguments) == json::parse(R"({"city": "Rome"})"),
                  shown + ": second call " + parts.tool_calls[1].name + " " + parts.tool_calls[1].arguments);
    }
    check(trimmed(parts.content).empty(), shown + ": content left " + json::dump(json::Value(parts.content)));
    // Templates that keep the last turn's reasoning must give it back as reasoning.
    if (!c.reasoning_parser.empty() && output.find(kReasoning) != std::string::npos)
        check(parts.reasoning && trimmed(*parts.reasoning) == kReasoning,
              shown + ": reasoning " + (parts.reasoning ? json::dump(json::Value(*parts.reasoning)) : "none"));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {  // CTest's run: the fixtures live beside the project, in its Python suite's tests/
        std::printf("no TEMPLATES_DIR given: nothing checked\n");
        return report();
    }
    const std::vector<Case> cases = {
        {"Qwen-Qwen3-0.6B.jinja", "hermes", "qwen3", R"({"enable_thinking": true})"},
        {"Qwen3-Coder.jinja", "qwen3_coder", "", ""},
        {"Qwen3.5-4B.jinja", "qwen3_coder", "qwen3", R"({"enable_thinking": true})"},
        {"GLM-4.6.jinja", "glm45", "glm45", ""},
        {"GLM-4.7-Flash.jinja", "glm45", "glm45", ""},
        {"moonshotai-Kimi-K2.jinja", "kimi_k2", "", ""},
        // Its template renders with list.append, which transformers' immutable
        // sandbox refuses, and so does ours: only detection is checked.
        {"Kimi-K2-Thinking.jinja", "kimi_k2", "deepseek_r1", "", /*renders=*/false},
        {"deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v31", "deepseek_v3", R"({"thinking": true})"},
        {"ibm-granite-granite-4.0.jinja", "hermes", "", ""},
        {"ibm-granite-granite-4.1.jinja", "hermes", "", ""},
        {"openai-gpt-oss-120b.jinja", "openai", "openai_gptoss", ""},
    };
    // Granite 3.3 and Phi-4-mini render no assistant tool calls: the turn as
    // their instructions ask the model to write it. Granite 3.3's system
    // prompt asks for "<|tool_call|> followed by a JSON list of tools used",
    // and (with thinking) thoughts "between <think></think>"; it answers
    // without <think> when thinking is off.
    const std::string granite_calls =
        R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, )"
        R"({"name": "get_time", "arguments": {"city": "Rome"}}])";
    const std::vector<Case> written = {
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", "granite", "granite", R"({"thinking": true})", true,
         std::string("<think>") + kReasoning + "</think>" + granite_calls},
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", "granite", "granite", "", true, granite_calls},
        // Phi-4-mini-instruct's model card: calls as functools[...] (vLLM's phi4_mini_json).
        {"microsoft-Phi-4-mini-instruct.jinja", "phi4_mini_json", "", "", true,
         R"(functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, )"
         R"({"name": "get_time", "arguments": {"city": "Rome"}}])"},
    };
    for (const Case& c : cases) check_template(argv[1], c);
    for (const Case& c : written) check_template(argv[1], c);
    return report();
}
