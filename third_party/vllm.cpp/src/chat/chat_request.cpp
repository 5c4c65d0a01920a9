#include "chat/chat_request.h"

#include <algorithm>
#include <limits>

#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

using json::field;
using json::read_bool;
using json::read_int32_in;
using json::read_string;
using json::require_array;
using json::require_object;
using json::required_string;
using json::wrong_type;

// ------------------------------------------------------------- messages

// "function" is the legacy function-calling API's tool result.
bool is_known_role(const std::string& role) {
    return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool" ||
           role == "function";
}

// One content part's text, as vLLM's "string" content format reads it: a
// plain string, a typed text part ("text", and the Responses-style
// "input_text" / "output_text"), a "refusal" part, or an untyped {"text"}.
std::string part_text(const json::Value& part, const std::string& name) {
    if (part.is_string()) return part.as_string();
    require_object(part, name);
    const json::Value* type = field(part, "type");
    if (type == nullptr) return required_string(part, "text", name);
    const std::string& kind = read_string(*type, name + ".type");
    if (kind == "text" || kind == "input_text" || kind == "output_text") return required_string(part, "text", name);
    if (kind == "refusal") return required_string(part, "refusal", name);
    throw_invalid_argument("'" + name + ".type' '" + kind + "' is not supported (text parts only)");
}

bool is_image_part(const json::Value& part) {
    if (!part.is_object()) return false;
    const json::Value* type = field(part, "type");
    return type != nullptr && type->is_string() &&
           (type->as_string() == "image" || type->as_string() == "image_url" || type->as_string() == "input_image");
}

// Content with images (issue 46), as vLLM's "openai" content format hands
// it to a template: a list of {"type": "image"} and {"type": "text", "text"}
// parts, in order. An image_url part still holding its URL never reaches
// here: the caller (the Python layer, the server) decodes it into pixels and
// sends {"type": "image"} with the image beside the request.
json::Value parts_with_images(const json::Value& content, const std::string& name) {
    json::Value parts = json::Value::array();
    for (size_t i = 0; i < content.items().size(); ++i) {
        const json::Value& item = content.items()[i];
        const std::string part_name = name + "[" + std::to_string(i) + "]";
        json::Value part = json::Value::object();
        if (is_image_part(item)) {
            if (field(item, "type")->as_string() != "image")
                throw_invalid_argument("'" + part_name + "': " + field(item, "type")->as_string() +
                                       " parts are decoded by the caller into images (the Python layer and the "
                                       "server do): send {\"type\": \"image\"} with the image's pixels beside the "
                                       "request (vllm_chat_submit_pull_with_images)");
            part.set("type", "image");
        } else {
            part.set("type", "text");
            part.set("text", part_text(item, part_name));
        }
        parts.push_back(std::move(part));
    }
    return parts;
}

// String content as is; null or absent as "" (vLLM's rendering of an
// assistant turn that only calls tools); an array of text parts joined with "\n".
std::string text_content(const json::Value* content, const std::string& name) {
    if (content == nullptr) return "";
    if (content->is_string()) return content->as_string();
    if (!content->is_array()) wrong_type(name, "a string or an array of text parts", *content);
    std::string joined;
    for (size_t i = 0; i < content->items().size(); ++i) {
        if (i > 0) joined += '\n';
        joined += part_text(content->items()[i], name + "[" + std::to_string(i) + "]");
    }
    return joined;
}

// A JSON string is parsed into its value (templates iterate
// `arguments|items` or print it with `tojson`); an object or array is kept;
// null, absent or "" is {} (vLLM's rule).
json::Value tool_call_arguments(const json::Value& function, const std::string& name) {
    const json::Value* arguments = field(function, "arguments");
    if (arguments == nullptr) return json::Value::object();
    if (arguments->is_object() || arguments->is_array()) return *arguments;
    const std::string& text = read_string(*arguments, name);
    if (text.empty()) return json::Value::object();
    try {
        return json::parse(text);
    } catch (const Error& e) {
        throw_invalid_argument("'" + name + "' is not valid JSON: " + e.what());
    }
}

// Each call as the client sent it (templates may print it whole), its
// arguments normalized.
json::Value normalized_tool_calls(const json::Value& calls, const std::string& name) {
    require_array(calls, name);
    json::Value out = json::Value::array();
    for (size_t i = 0; i < calls.items().size(); ++i) {
        const std::string call_name = name + "[" + std::to_string(i) + "]";
        json::Value call = calls.items()[i];
        require_object(call, call_name);
        if (const json::Value* id = field(call, "id")) read_string(*id, call_name + ".id");
        const json::Value* function = field(call, "function");
        if (function == nullptr) throw_invalid_argument("'" + call_name + ".function' is required");
        require_object(*function, call_name + ".function");
        required_string(*function, "name", call_name + ".function");
        json::Value arguments = tool_call_arguments(*function, call_name + ".function.arguments");
        call.find("function")->set("arguments", std::move(arguments));
        out.push_back(std::move(call));
    }
    return out;
}

// The message as vLLM hands it to a template: role, content as a string,
// and only the fields templates read (tool_calls, tool_call_id, name,
// reasoning); what SDKs send beside them (refusal, audio, annotations,
// function_call: null) is dropped rather than shown to the template as null.
json::Value normalized_message(const json::Value& message, const std::string& name) {
    require_object(message, name);
    const std::string& role = required_string(message, "role", name);
    if (!is_known_role(role))
        throw_invalid_argument("'" + name +
                               ".role' must be one of system, developer, user, assistant, tool, function (got '" +
                               role + "')");
    json::Value out = json::Value::object();
    // A legacy function result is the tool message it became, named by its function.
    out.set("role", role == "function" ? "tool" : role);
    const json::Value* content = field(message, "content");
    if (content != nullptr && content->is_array() &&
        std::any_of(content->items().begin(), content->items().end(), is_image_part))
        out.set("content", parts_with_images(*content, name + ".content"));
    else
        out.set("content", text_content(content, name + ".content"));
    if (role == "function") required_string(message, "name", name);
    if (role == "assistant") {
        if (const json::Value* calls = field(message, "tool_calls")) {
            out.set("tool_calls", normalized_tool_calls(*calls, name + ".tool_calls"));
        } else if (const json::Value* legacy = field(message, "function_call")) {
            // The legacy API's one call, as the tool call it became.
            json::Value call = json::Value::object();
            call.set("type", "function");
            call.set("function", *legacy);
            json::Value calls = json::Value::array();
            calls.push_back(std::move(call));
            out.set("tool_calls", normalized_tool_calls(calls, name + ".function_call"));
        }
        for (const char* key : {"reasoning_content", "reasoning"})
            if (const json::Value* v = field(message, key)) {
                // vLLM shows the reasoning under both names.
                const std::string& reasoning = read_string(*v, name + "." + key);
                out.set("reasoning", reasoning);
                out.set("reasoning_content", reasoning);
            }
    }
    if (role == "tool")
        if (const json::Value* id = field(message, "tool_call_id"))
            out.set("tool_call_id", read_string(*id, name + ".tool_call_id"));
    if (const json::Value* v = field(message, "name")) out.set("name", read_string(*v, name + ".name"));
    return out;
}

json::Value parse_messages(const json::Value& body) {
    const json::Value* messages = field(body, "messages");
    if (messages == nullptr) throw_invalid_argument("'messages' is required");
    json::Value out = normalize_messages(*messages);
    if (out.items().empty()) throw_invalid_argument("'messages' must not be empty");
    return out;
}

// ---------------------------------------------------------------- tools

// OpenAI's deprecated function calling, read as what replaced it: each of
// `functions` is a tool, `function_call` ("none", "auto" or {"name": ...})
// the tool_choice. Given beside its replacement it is refused.
json::Value with_legacy_functions(json::Value body) {
    if (const json::Value* functions = field(body, "functions")) {
        if (field(body, "tools") != nullptr) throw_invalid_argument("give 'tools' or the legacy 'functions', not both");
        require_array(*functions, "functions");
        json::Value tools = json::Value::array();
        for (size_t i = 0; i < functions->items().size(); ++i) {
            require_object(functions->items()[i], "functions[" + std::to_string(i) + "]");
            json::Value tool = json::Value::object();
            tool.set("type", "function");
            tool.set("function", functions->items()[i]);
            tools.push_back(std::move(tool));
        }
        body.set("tools", std::move(tools));
    }
    if (const json::Value* call = field(body, "function_call")) {
        if (field(body, "tool_choice") != nullptr)
            throw_invalid_argument("give 'tool_choice' or the legacy 'function_call', not both");
        json::Value choice;
        if (call->is_object()) {
            json::Value function = json::Value::object();
            function.set("name", required_string(*call, "name", "function_call"));
            choice = json::Value::object();
            choice.set("type", "function");
            choice.set("function", std::move(function));
        } else {
            const std::string& value = read_string(*call, "function_call");
            if (value != "none" && value != "auto")
                throw_invalid_argument("'function_call' must be 'none', 'auto' or {\"name\": ...} (got '" + value + "')");
            choice = value;
        }
        body.set("tool_choice", std::move(choice));
    }
    return body;
}

json::Value parse_tools(const json::Value& body) {
    const json::Value* tools = field(body, "tools");
    if (tools == nullptr) return json::Value();
    require_array(*tools, "tools");
    for (size_t i = 0; i < tools->items().size(); ++i) {
        const json::Value& tool = tools->items()[i];
        const std::string name = "tools[" + std::to_string(i) + "]";
        require_object(tool, name);
        const std::string& type = required_string(tool, "type", name);
        if (type != "function") throw_invalid_argument("'" + name + ".type' must be 'function' (got '" + type + "')");
        const json::Value* function = field(tool, "function");
        if (function == nullptr) throw_invalid_argument("'" + name + ".function' is required");
        require_object(*function, name + ".function");
        if (required_string(*function, "name", name + ".function").empty())
            throw_invalid_argument("'" + name + ".function.name' must not be empty");
        if (const json::Value* d = field(*function, "description")) read_string(*d, name + ".function.description");
        if (const json::Value* p = field(*function, "parameters")) require_object(*p, name + ".function.parameters");
    }
    return *tools;
}

void parse_tool_choice(const json::Value& body, ChatRequest& r) {
    const bool has_tools = r.tools.is_array() && r.tools.size() > 0;
    const json::Value* choice = field(body, "tool_choice");
    if (choice == nullptr) {
        r.tool_choice = has_tools ? ToolChoice::Auto : ToolChoice::None;
        return;
    }
    if (choice->is_object()) {
        const std::string& type = required_string(*choice, "type", "tool_choice");
        if (type != "function") throw_invalid_argument("'tool_choice.type' must be 'function' (got '" + type + "')");
        const json::Value* function = field(*choice, "function");
        if (function == nullptr) throw_invalid_argument("'tool_choice.function' is required");
        require_object(*function, "tool_choice.function");
        r.tool_choice_name = required_string(*function, "name", "tool_choice.function");
        if (tool_index(r.tools, r.tool_choice_name) < 0)
            throw_invalid_argument("'tool_choice' names function '" + r.tool_choice_name +
                                   "', which is not among 'tools'");
        r.tool_choice = ToolChoice::Named;
        return;
    }
    const std::string& value = read_string(*choice, "tool_choice");
    if (value == "none") {
        r.tool_choice = ToolChoice::None;
        return;
    }
    if (value != "auto" && value != "required")
        throw_invalid_argument("'tool_choice' must be 'none', 'auto', 'required' or a named function (got '" + value +
                               "')");
    if (!has_tools) throw_invalid_argument("tool_choice '" + value + "' needs 'tools'");
    r.tool_choice = value == "auto" ? ToolChoice::Auto : ToolChoice::Required;
}

// ------------------------------------------------------------- sampling

void refuse_prompt_logprobs(const ChatRequest& r) {
    if (r.sampling.prompt_logprobs >= 0)
        throw_invalid_argument("'prompt_logprobs' is not supported in chat requests yet (completions take it)");
}

// Chat's own output fields (the shared ones: openai_request.h).
void parse_outputs(const json::Value& body, ChatRequest& r) {
    if (const json::Value* v = field(body, "logprobs")) r.logprobs = read_bool(*v, "logprobs");
    if (const json::Value* v = field(body, "top_logprobs")) {
        r.top_logprobs = read_int32_in(*v, "top_logprobs", 0, kMaxLogprobs, "between 0 and 20");
        if (r.top_logprobs > 0 && !r.logprobs) throw_invalid_argument("'top_logprobs' needs 'logprobs' to be true");
    }
    if (const json::Value* v = field(body, "thinking_token_budget"); v != nullptr && !v->is_null())
        r.thinking_token_budget = read_int32_in(*v, "thinking_token_budget", 0, INT32_MAX, "at least 0");
}

void parse_template_options(const json::Value& body, ChatRequest& r) {
    if (const json::Value* v = field(body, "chat_template")) {
        r.chat_template = read_string(*v, "chat_template");
        if (r.chat_template.empty()) throw_invalid_argument("'chat_template' must not be empty");
    }
    if (const json::Value* v = field(body, "chat_template_kwargs")) {
        require_object(*v, "chat_template_kwargs");
        // transformers would take it as the template itself; one way to give it is enough.
        if (v->contains("chat_template"))
            throw_invalid_argument("'chat_template_kwargs.chat_template' is not supported: give the template as the "
                                   "request's 'chat_template'");
        r.chat_template_kwargs = *v;
    }
    // OpenAI's reasoning_effort reaches the template as the variable of that
    // name (gpt-oss's "Reasoning: high"), unless chat_template_kwargs sets it.
    if (const json::Value* v = field(body, "reasoning_effort"); v != nullptr && !v->is_null()) {
        const std::string effort = read_string(*v, "reasoning_effort");
        if (!r.chat_template_kwargs.contains("reasoning_effort")) r.chat_template_kwargs.set("reasoning_effort", effort);
    }
    if (const json::Value* v = field(body, "add_generation_prompt"))
        r.add_generation_prompt = read_bool(*v, "add_generation_prompt");
    if (const json::Value* v = field(body, "continue_final_message"))
        r.continue_final_message = read_bool(*v, "continue_final_message");
    if (r.add_generation_prompt && r.continue_final_message)
        throw_invalid_argument("'add_generation_prompt' and 'continue_final_message' cannot both be true");
}

}  // namespace

json::Value normalize_messages(const json::Value& messages) {
    require_array(messages, "messages");
    json::Value out = json::Value::array();
    for (size_t i = 0; i < messages.items().size(); ++i)
        out.push_back(normalized_message(messages.items()[i], "messages[" + std::to_string(i) + "]"));
    return out;
}

int tool_index(const json::Value& tools, const std::string& name) {
    if (!tools.is_array()) return -1;
    for (size_t i = 0; i < tools.size(); ++i)
        if (tools.items()[i].find("function")->find("name")->as_string() == name) return static_cast<int>(i);
    return -1;
}

std::optional<bool> ChatRequest::enable_thinking() const {
    const json::Value* v = chat_template_kwargs.find("enable_thinking");
    if (v == nullptr || !v->is_bool()) return std::nullopt;
    return v->as_bool();
}

ChatRequest parse_chat_request(std::string_view request_json) {
    json::Value parsed = json::parse(request_json);
    if (!parsed.is_object()) wrong_type("request", "a JSON object", parsed);
    const json::Value body = with_legacy_functions(std::move(parsed));
    ChatRequest r;
    r.sampling.max_tokens = 0;  // chat's default: up to max_model_len
    r.legacy_functions = field(body, "functions") != nullptr;
    r.messages = parse_messages(body);
    r.tools = parse_tools(body);
    parse_tool_choice(body, r);
    parse_openai_fields(body, r);
    refuse_prompt_logprobs(r);
    parse_outputs(body, r);
    parse_template_options(body, r);
    for (const json::Value& message : r.messages.items())
        if (const json::Value* content = message.find("content"); content != nullptr && content->is_array())
            for (const json::Value& part : content->items())
                if (part.find("type")->as_string() == "image") ++r.num_images;
    return r;
}

}  // namespace vllm::chat
