// Renders OpenAI chat messages into a prompt with the model's Jinja chat
// template, exactly as Hugging Face transformers renders it (jinja2's
// sandbox with trim_blocks and lstrip_blocks, transformers' tojson,
// raise_exception and strftime_now, loop controls).
#pragma once
#include <memory>
#include <string>

#include "util/json.h"

namespace vllm::chat {

namespace jinja {
struct Template;
}

class ChatTemplate {
public:
    // Parses once; syntax errors and unsupported constructs throw
    // INVALID_ARGUMENT "chat template line N: ...".
    ChatTemplate(std::string source, std::string bos_token, std::string eos_token);
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    // The template sees: messages, tools (None when `tools` is null),
    // add_generation_prompt, bos_token, eos_token, then every member of
    // `extra` (chat_template_kwargs, e.g. enable_thinking; null = none).
    // Errors throw INVALID_ARGUMENT: raise_exception's message verbatim as
    // "chat template error: <message>", anything else as
    // "chat template error: line N: <message>". Thread-safe (const).
    std::string render(const json::Value& messages, const json::Value& tools, bool add_generation_prompt,
                       const json::Value& extra) const;

    const std::string& source() const { return source_; }

private:
    std::string source_;
    std::string bos_token_;
    std::string eos_token_;
    std::unique_ptr<jinja::Template> template_;
};

// For a model without a chat template: each message as "<role>: <content>\n"
// (messages as chat_request.h's normalize_messages makes them; null content as ""), then
// "assistant: " when add_generation_prompt. Example:
// "system: Be brief.\nuser: Hi\nassistant: ".
std::string render_without_template(const json::Value& messages, bool add_generation_prompt);

}  // namespace vllm::chat
