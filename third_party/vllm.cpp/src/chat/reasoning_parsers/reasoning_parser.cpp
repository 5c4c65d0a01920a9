#include "chat/reasoning_parsers/reasoning_parser.h"

#include "chat/marker_scan.h"
#include "chat/reasoning_parsers/granite_response_filter.h"
#include "chat/reasoning_parsers/harmony_reasoning_parser.h"
#include "chat/reasoning_parsers/think_tag_parser.h"
#include "util/error.h"

namespace vllm::chat {

namespace {

using Phase = ThinkTagParser::Phase;

constexpr std::string_view kKnownReasoningParsers =
    "deepseek_r1, qwen3, mistral, none, openai_gptoss, glm45, granite, deepseek_v3, seed_oss";

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// Granite 3.2's plain-text markers (quantized models were seen writing
// "Here's"), and Granite 3.3's tags (its template asks for thoughts "between
// <think></think>").
const std::vector<std::string> kGraniteThinkStarts = {"Here is my thought process:", "Here's my thought process:",
                                                      "<think>"};
const std::vector<std::string> kGraniteResponseStarts = {"Here is my response:", "Here's my response:", "</think>"};

// Qwen3's template closes an empty thinking block in the prompt when
// thinking is off ("<think>\n\n</think>\n\n").
bool qwen3_thinking_off(const ChatRequest& request, std::string_view prompt_text) {
    if (request.enable_thinking() == false) return true;
    return ends_with(trim_right(prompt_text), "</think>");
}

// DeepSeek-V3.1's template thinks when asked to (chat_template_kwargs
// "thinking", vLLM's switch; "enable_thinking" as the other templates spell it).
bool deepseek_v3_thinking(const ChatRequest& request) {
    for (const char* key : {"thinking", "enable_thinking"}) {
        const json::Value* v = request.chat_template_kwargs.find(key);
        if (v != nullptr && v->is_bool() && v->as_bool()) return true;
    }
    return false;
}

// Where a template that may open (or close) the thinking block in the
// generation prompt leaves the output: GLM-4.5 closes an empty block when
// thinking is off, later GLM templates open one.
Phase start_after_prompt(std::string_view prompt_text, std::string_view open_tag) {
    return ends_with(trim_right(prompt_text), open_tag) ? Phase::Reasoning : Phase::BeforeReasoning;
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
    if (name == "openai_gptoss") return std::make_unique<HarmonyReasoningParser>();
    if (name == "glm45") {
        // Content until the model opens "<think>"; a "</think>" alone is prose.
        return std::make_unique<ThinkTagParser>(std::vector<std::string>{"<think>"}, std::vector<std::string>{"</think>"},
                                                start_after_prompt(prompt_text, "<think>"),
                                                /*stray_close_is_content=*/true);
    }
    if (name == "granite") {
        // Granite 3.2/3.3 with chat_template_kwargs.thinking: plain-text markers.
        return std::make_unique<GraniteResponseFilter>(std::make_unique<ThinkTagParser>(
            kGraniteThinkStarts, kGraniteResponseStarts, Phase::BeforeReasoning, /*stray_close_is_content=*/true));
    }
    if (name == "deepseek_v3") {
        const Phase start = deepseek_v3_thinking(request) ? Phase::Reasoning : Phase::AfterReasoning;
        return std::make_unique<ThinkTagParser>("<think>", "</think>", start);
    }
    if (name == "seed_oss") return std::make_unique<ThinkTagParser>("<seed:think>", "</seed:think>", Phase::Reasoning);
    throw_invalid_argument("unknown reasoning_parser '" + std::string(name) + "' (known: " +
                           std::string(kKnownReasoningParsers) + ")");
}

ReasoningEnd reasoning_end_of(std::string_view name) {
    if (name == "mistral") return {"[/THINK]", "[/THINK]"};
    if (name == "seed_oss") return {"</seed:think>", "</seed:think>"};
    if (name == "granite")
        return {kGraniteResponseStarts[0], kGraniteResponseStarts[0],
                std::vector<std::string>(kGraniteResponseStarts.begin() + 1, kGraniteResponseStarts.end())};
    // gpt-oss leaves the analysis channel for the final one.
    if (name == "openai_gptoss") return {"<|channel|>final<|message|>", "<|end|><|start|>assistant<|channel|>final<|message|>"};
    return {"</think>", "</think>"};  // deepseek_r1, qwen3, glm45, deepseek_v3
}

std::vector<std::string> reasoning_openers_of(std::string_view name) {
    if (name == "mistral") return {"[THINK]"};
    if (name == "glm45") return {"<think>"};
    if (name == "granite") return kGraniteThinkStarts;
    return {};
}

bool output_starts_reasoning(std::string_view name, const ChatRequest& request, std::string_view prompt_text) {
    if (name.empty() || name == "none") return false;
    // gpt-oss always opens a channel first: the analysis, unless it answers at once.
    if (name == "openai_gptoss") return true;
    // Text without markers is reasoning when the section is already open.
    const std::string probe = "{}";
    return make_reasoning_parser(name, request, prompt_text)->parse_all(probe).content != probe;
}

bool reasoning_parser_reads_special_tokens(std::string_view name) {
    // GLM-4.5's <think> and Seed-OSS's <seed:think> are special tokens of their tokenizers.
    return name == "openai_gptoss" || name == "glm45" || name == "seed_oss";
}

std::string detect_reasoning_parser(std::string_view template_source) {
    auto has = [&](std::string_view marker) { return template_source.find(marker) != std::string_view::npos; };
    if (has("<|channel|>")) return "openai_gptoss";
    if (has("[THINK]")) return "mistral";
    if (has("<seed:think>")) return "seed_oss";
    if (has("Here is my thought process:")) return "granite";
    // Granite 3.3 (its calls after <|tool_call|>) thinks in <think> tags it opens itself, when asked.
    if (has("<|tool_call|>") && has("<think>")) return "granite";
    // GLM-4.5's template writes "<|assistant|>" and its own empty "<think></think>".
    if (has("<|assistant|>") && has("</think>")) return "glm45";
    // DeepSeek-V3.1's template thinks only when its "thinking" variable is set
    // (llama.cpp's copy also reads enable_thinking into it).
    if (has("</think>") && has("<｜tool▁calls▁begin｜>") && has("thinking is defined")) return "deepseek_v3";
    if (has("</think>")) return has("enable_thinking") ? "qwen3" : "deepseek_r1";
    return "";
}

}  // namespace vllm::chat
