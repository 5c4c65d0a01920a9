// Reasoning ("thinking") parsers: split a model's output into the reasoning
// it wrote between thinking tags and the content meant for the user.
//
// One interface serves streaming and whole outputs: feed() each piece of
// generated text as it arrives and finish() at the end; the non-streaming
// result is parse_all(), i.e. feed(everything) + finish(), so both paths give
// the same split by construction. A tag cut across pieces ("<th" + "ink>") is
// held back until it is whole, never leaked into either field.
//
// Dialects (vLLM's parsers of the same names):
//   deepseek_r1  "<think>" ... "</think>". Output is reasoning from its first
//                byte: the opening tag is usually in the prompt (the R1
//                template ends the generation prompt with "<think>\n"); when
//                the model writes it, it is dropped. No "</think>": all of it
//                is reasoning (the output was cut short).
//   qwen3        as deepseek_r1, but with thinking switched off
//                (chat_template_kwargs.enable_thinking == false, or a prompt
//                ending in an empty "<think>...</think>" block) everything is
//                content.
//   mistral      "[THINK]" ... "[/THINK]". Only text inside the tags is
//                reasoning (a prompt ending in "[THINK]" starts inside);
//                text before and after is content; a stray "[/THINK]" with
//                no opening is dropped.
//   openai_gptoss gpt-oss's harmony channels: analysis is reasoning
//                (harmony_reasoning_parser.h).
//   glm45        "<think>" ... "</think>", content until "<think>" (a
//                prompt ending in "<think>" starts inside); a stray
//                "</think>" is content.
//   granite      Granite 3.2's "Here is my thought process:" ...
//                "Here is my response:" (or "Here's"), and Granite 3.3's
//                "<think>" ... "</think>" (vLLM's granite reads the first
//                form only), content until the first; 3.3's <response>
//                wrapper around the content goes (granite_response_filter.h).
//   deepseek_v3  as deepseek_r1 when chat_template_kwargs.thinking (or
//                enable_thinking) is true, else everything is content
//                (DeepSeek-V3.1 thinks only when asked).
//   seed_oss     as deepseek_r1 with "<seed:think>" ... "</seed:think>".
//   none         everything is content.
//
// The field is called `reasoning_content` in messages and deltas, as vLLM
// names it (the response builders emit that name).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_request.h"

namespace vllm::chat {

struct ReasoningDelta {
    std::string reasoning;
    std::string content;
    bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningParser {
public:
    virtual ~ReasoningParser() = default;
    virtual ReasoningDelta feed(std::string_view text) = 0;
    virtual ReasoningDelta finish() = 0;
    // Whole output at once: feed(text) + finish().
    ReasoningDelta parse_all(std::string_view text);
};

// name: one of the dialects above; anything else is
// INVALID_ARGUMENT "unknown reasoning_parser 'x' (known: ...)". prompt_text is
// the rendered prompt the output continues (whether it opened or closed a
// thinking block decides the starting state).
std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name, const ChatRequest& request,
                                                       std::string_view prompt_text);

// How the dialect's reasoning section ends, for the engine's gate
// (engine/reasoning_gate.h): the text whose completion ends it, and the text
// forced when a thinking budget runs out (ending with the marker).
struct ReasoningEnd {
    std::string marker;
    std::string forced;
    std::vector<std::string> others;  // other spellings that end it too (Granite's)
};
ReasoningEnd reasoning_end_of(std::string_view name);

// The markers with which a model opens the dialect's reasoning section
// itself, for the gate to count a budget from (mistral, glm45, granite:
// their reasoning begins where the model writes one); empty for the others.
std::vector<std::string> reasoning_openers_of(std::string_view name);

// Whether a request's output, as the dialect reads it after this prompt,
// starts inside the reasoning section (a "qwen3" prompt that opened a think
// block; not with thinking switched off, nor for dialects whose reasoning
// begins only where the model opens it).
bool output_starts_reasoning(std::string_view name, const ChatRequest& request, std::string_view prompt_text);

// Whether the dialect's markers are special tokens that detokenizing would
// drop (harmony's "<|channel|>", GLM's "<think>"): its requests keep special tokens.
bool reasoning_parser_reads_special_tokens(std::string_view name);

// The dialect a chat template's markers show, or "" when it has none.
std::string detect_reasoning_parser(std::string_view template_source);

}  // namespace vllm::chat
