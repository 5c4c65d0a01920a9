#include "chat/chat_template.h"

#include "chat/jinja/error.h"
#include "chat/jinja/globals.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/parser.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm::chat {

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
    : source_(std::move(source)), bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)) {
    if (!utf8::is_valid(source_)) throw_invalid_argument("chat template is not valid UTF-8");
    if (!utf8::is_valid(bos_token_) || !utf8::is_valid(eos_token_))
        throw_invalid_argument("chat template bos_token/eos_token is not valid UTF-8");
    try {
        template_ = std::make_unique<jinja::Template>(jinja::parse(source_));
    } catch (const jinja::SyntaxError& e) {
        throw_invalid_argument("chat template line " + std::to_string(e.line) + ": " + e.what());
    }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const json::Value& messages, const json::Value& tools, bool add_generation_prompt,
                                 const json::Value& extra) const {
    if (!messages.is_array()) throw_invalid_argument("chat template render: messages must be a JSON array");
    if (!tools.is_null() && !tools.is_array())
        throw_invalid_argument("chat template render: tools must be a JSON array or null");
    if (!extra.is_null() && !extra.is_object())
        throw_invalid_argument("chat template render: chat_template_kwargs must be a JSON object");

    static const auto kGlobals = [] {
        auto scope = std::make_shared<jinja::Scope>();
        scope->vars = jinja::builtin_globals();
        return scope;
    }();
    auto context = std::make_shared<jinja::Scope>();
    context->parent = kGlobals;
    context->set("messages", jinja::from_json(messages));
    context->set("tools", jinja::from_json(tools));
    context->set("add_generation_prompt", jinja::Value(add_generation_prompt));
    context->set("bos_token", jinja::Value(bos_token_));
    context->set("eos_token", jinja::Value(eos_token_));
    if (extra.is_object())
        for (const auto& member : extra.members()) context->set(member.first, jinja::from_json(member.second));

    try {
        jinja::Interpreter interp(context);
        return interp.render(*template_);
    } catch (const jinja::RenderError& e) {
        if (e.raised_by_template) throw_invalid_argument(std::string("chat template error: ") + e.what());
        throw_invalid_argument("chat template error: line " + std::to_string(e.line) + ": " + e.what());
    }
}

namespace {

std::string where(size_t message, const char* field) {
    return "messages[" + std::to_string(message) + "]." + field;
}

}  // namespace

std::string render_without_template(const json::Value& messages, bool add_generation_prompt) {
    if (!messages.is_array()) throw_invalid_argument("messages must be a JSON array");
    std::string out;
    for (size_t i = 0; i < messages.items().size(); ++i) {
        const json::Value& message = messages.items()[i];
        const json::Value* role = message.find("role");
        if (role == nullptr || !role->is_string()) throw_invalid_argument(where(i, "role") + " must be a string");
        const json::Value* content = message.find("content");
        if (content != nullptr && !content->is_null() && !content->is_string())
            throw_invalid_argument(where(i, "content") + " must be a string, an array of text parts or null");
        out += role->as_string();
        out += ": ";
        if (content != nullptr && content->is_string()) out += content->as_string();
        out += '\n';
    }
    if (add_generation_prompt) out += "assistant: ";
    return out;
}

}  // namespace vllm::chat
