#include "chat/reasoning_parsers/reasoning_parser.h"

#include "chat/reasoning_parsers/think_tag_parser.h"
#include "util/error.h"

namespace vllm::chat {

namespace {

using Phase = ThinkTagParser::Phase;

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Qwen3's template closes an empty thinking block in the prompt when
// thinking is off ("<think>\n\n</think>\n\n").
bool qwen3_thinking_off(const ChatRequest& request, std::string_view prompt_text) {
    if (request.enable_thinking() == false) return true;
    return ends_with(trim_right(prompt_text), "</think>");
}

}  // namespace

ReasoningDelta ReasoningParser::parse_all(std::string_view text) {
    ReasoningDelta out = feed(text);
    ReasoningDelta tail = finish();
    out.reasoning += tail.reasoning;
    out.content += tail.content;
    return out;
}

std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name, const ChatRequest& request,
                                                       std::string_view prompt_text) {
    if (name == "deepseek_r1") return std::make_unique<ThinkTagParser>("<think>", "</think>", Phase::Reasoning);
    if (name == "qwen3") {
        const Phase start = qwen3_thinking_off(request, prompt_text) ? Phase::AfterReasoning : Phase::Reasoning;
        return std::make_unique<ThinkTagParser>("<think>", "</think>", start);
    }
    if (name == "mistral") {
        const Phase start = ends_with(trim_right(prompt_text), "[THINK]") ? Phase::Reasoning : Phase::BeforeReasoning;
        return std::make_unique<ThinkTagParser>("[THINK]", "[/THINK]", start);
    }
    if (name == "none") return std::make_unique<ThinkTagParser>("", "", Phase::AfterReasoning);
    throw_invalid_argument("unknown reasoning_parser '" + std::string(name) +
                           "' (known: deepseek_r1, qwen3, mistral, none)");
}

std::string detect_reasoning_parser(std::string_view template_source) {
    auto has = [&](std::string_view marker) { return template_source.find(marker) != std::string_view::npos; };
    if (has("[THINK]")) return "mistral";
    if (has("</think>")) return has("enable_thinking") ? "qwen3" : "deepseek_r1";
    return "";
}

}  // namespace vllm::chat
