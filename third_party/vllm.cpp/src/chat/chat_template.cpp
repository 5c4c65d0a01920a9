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

// Text parts joined with "\n" (vLLM's "string" content format).
std::string join_text_parts(const json::Value& parts, size_t message) {
    std::string out;
    for (size_t j = 0; j < parts.items().size(); ++j) {
        const json::Value& part = parts.items()[j];
        std::string at = where(message, "content") + "[" + std::to_string(j) + "]";
        if (!part.is_object()) throw_invalid_argument(at + " must be an object");
        const json::Value* type = part.find("type");
        if (type == nullptr || !type->is_string()) throw_invalid_argument(at + ".type must be a string");
        if (type->as_string() != "text")
            throw_invalid_argument(at + ": content part type '" + type->as_string() +
                                   "' is not supported (text-only engine)");
        const json::Value* text = part.find("text");
        if (text == nullptr || !text->is_string()) throw_invalid_argument(at + ".text must be a string");
        if (j > 0) out += '\n';
        out += text->as_string();
    }
    return out;
}

void parse_tool_call_arguments(json::Value& tool_calls, size_t message) {
    if (!tool_calls.is_array()) return;
    for (size_t j = 0; j < tool_calls.items().size(); ++j) {
        json::Value& call = tool_calls.items()[j];
        if (!call.is_object()) continue;
        json::Value* function = call.find("function");
        if (function == nullptr || !function->is_object()) continue;
        json::Value* arguments = function->find("arguments");
        if (arguments == nullptr || !arguments->is_string()) continue;
        try {
            *arguments = json::parse(arguments->as_string());
        } catch (const Error& e) {
            throw_invalid_argument(where(message, "tool_calls") + "[" + std::to_string(j) +
                                   "].function.arguments is not valid JSON: " + e.what());
        }
    }
}

}  // namespace

json::Value normalize_messages(const json::Value& openai_messages) {
    if (!openai_messages.is_array()) throw_invalid_argument("messages must be a JSON array");
    json::Value out = openai_messages;
    for (size_t i = 0; i < out.items().size(); ++i) {
        json::Value& message = out.items()[i];
        if (!message.is_object()) throw_invalid_argument("messages[" + std::to_string(i) + "] must be an object");
        if (json::Value* content = message.find("content"); content != nullptr && content->is_array())
            *content = json::Value(join_text_parts(*content, i));
        const json::Value* role = message.find("role");
        if (role != nullptr && role->is_string() && role->as_string() == "assistant")
            if (json::Value* tool_calls = message.find("tool_calls")) parse_tool_call_arguments(*tool_calls, i);
    }
    return out;
}

std::string render_without_template(const json::Value& messages, bool add_generation_prompt) {
    json::Value normalized = normalize_messages(messages);
    std::string out;
    for (size_t i = 0; i < normalized.items().size(); ++i) {
        const json::Value& message = normalized.items()[i];
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
