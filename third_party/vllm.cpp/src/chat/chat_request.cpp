#include "chat/chat_request.h"

#include <algorithm>
#include <limits>

#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

using json::field;
using json::out_of_range;
using json::read_bool;
using json::read_int32_in;
using json::read_integer;
using json::read_number;
using json::wrong_type;

const std::string& read_string(const json::Value& v, const std::string& name) {
    if (!v.is_string()) wrong_type(name, "a string", v);
    return v.as_string();
}

void require_object(const json::Value& v, const std::string& name) {
    if (!v.is_object()) wrong_type(name, "an object", v);
}

void require_array(const json::Value& v, const std::string& name) {
    if (!v.is_array()) wrong_type(name, "an array", v);
}

const std::string& required_string(const json::Value& object, std::string_view key, const std::string& owner) {
    const json::Value* v = field(object, key);
    const std::string name = owner + "." + std::string(key);
    if (v == nullptr) throw_invalid_argument("'" + name + "' is required");
    return read_string(*v, name);
}

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
    out.set("content", text_content(field(message, "content"), name + ".content"));
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

ResponseFormat parse_response_format(const json::Value& body) {
    ResponseFormat out;
    const json::Value* format = field(body, "response_format");
    if (format == nullptr) return out;
    require_object(*format, "response_format");
    const std::string& type = required_string(*format, "type", "response_format");
    if (type == "text") return out;
    if (type == "json_object") {
        out.type = ResponseFormat::Type::JsonObject;
        return out;
    }
    if (type != "json_schema")
        throw_invalid_argument("'response_format.type' must be 'text', 'json_object' or 'json_schema' (got '" + type +
                               "')");
    out.type = ResponseFormat::Type::JsonSchema;
    const json::Value* spec = field(*format, "json_schema");
    if (spec == nullptr) throw_invalid_argument("'response_format.json_schema' is required");
    require_object(*spec, "response_format.json_schema");
    if (const json::Value* name = field(*spec, "name")) read_string(*name, "response_format.json_schema.name");
    if (const json::Value* schema = field(*spec, "schema")) {
        if (!schema->is_object() && !schema->is_bool())
            wrong_type("response_format.json_schema.schema", "an object", *schema);
        out.schema = json::dump(*schema);
    }
    return out;
}

// One guided output's value: a schema (an object or its JSON text), a
// regex or grammar (a string), choices (a non-empty array of strings), or
// json_object (true).
void read_guided(const json::Value& v, GuidedOutput::Kind kind, const std::string& name, GuidedOutput& out) {
    out.kind = kind;
    out.field = name;
    switch (kind) {
        case GuidedOutput::Kind::JsonSchema:
            if (v.is_string()) out.text = v.as_string();
            else if (v.is_object() || v.is_bool()) out.text = json::dump(v);
            else wrong_type(name, "a JSON schema (an object or its JSON text)", v);
            break;
        case GuidedOutput::Kind::Choice:
            require_array(v, name);
            if (v.items().empty()) throw_invalid_argument("'" + name + "' must not be empty");
            for (size_t i = 0; i < v.items().size(); ++i)
                out.choices.push_back(read_string(v.items()[i], name + "[" + std::to_string(i) + "]"));
            break;
        case GuidedOutput::Kind::JsonObject:  // true (false is no constraint: parse_guided skips it)
            break;
        default:
            out.text = read_string(v, name);
    }
}

GuidedOutput parse_guided(const json::Value& body) {
    using Kind = GuidedOutput::Kind;
    GuidedOutput out;
    int given = 0;
    const std::pair<const char*, Kind> guided[] = {{"guided_json", Kind::JsonSchema}, {"guided_regex", Kind::Regex},
                                                   {"guided_choice", Kind::Choice}, {"guided_grammar", Kind::Grammar}};
    for (const auto& [key, kind] : guided)
        if (const json::Value* v = field(body, key)) {
            read_guided(*v, kind, key, out);
            ++given;
        }
    if (const json::Value* outputs = field(body, "structured_outputs")) {
        require_object(*outputs, "structured_outputs");
        const std::pair<const char*, Kind> keys[] = {{"json", Kind::JsonSchema}, {"regex", Kind::Regex},
                                                     {"choice", Kind::Choice},   {"grammar", Kind::Grammar},
                                                     {"json_object", Kind::JsonObject}};
        for (const auto& member : outputs->members())
            if (std::none_of(std::begin(keys), std::end(keys), [&](const auto& k) { return member.first == k.first; }))
                throw_invalid_argument("'structured_outputs." + member.first +
                                       "' is not supported (known: json, regex, choice, grammar, json_object)");
        for (const auto& [key, kind] : keys) {
            const json::Value* v = field(*outputs, key);
            const std::string name = std::string("structured_outputs.") + key;
            if (v == nullptr || (kind == Kind::JsonObject && !read_bool(*v, name))) continue;
            read_guided(*v, kind, name, out);
            ++given;
        }
    }
    if (given > 1)
        throw_invalid_argument("at most one structured-output constraint may be given (guided_json, guided_regex, "
                               "guided_choice, guided_grammar, or one key of structured_outputs)");
    return out;
}

// ------------------------------------------------------------- sampling

void parse_sampling(const json::Value& body, ChatRequest& r) {
    read_sampling_fields(body, r.sampling);
    if (r.sampling.prompt_logprobs >= 0)
        throw_invalid_argument("'prompt_logprobs' is not supported in chat requests yet (completions take it)");
}

void parse_outputs(const json::Value& body, ChatRequest& r) {
    if (const json::Value* v = field(body, "n")) r.n = read_int32_in(*v, "n", 1, 128, "between 1 and 128");
    if (const json::Value* v = field(body, "logprobs")) r.logprobs = read_bool(*v, "logprobs");
    if (const json::Value* v = field(body, "top_logprobs")) {
        r.top_logprobs = read_int32_in(*v, "top_logprobs", 0, kMaxLogprobs, "between 0 and 20");
        if (r.top_logprobs > 0 && !r.logprobs) throw_invalid_argument("'top_logprobs' needs 'logprobs' to be true");
    }
    if (const json::Value* v = field(body, "priority"))
        r.priority = read_int32_in(*v, "priority", std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max(), "a 32-bit integer");
    if (const json::Value* v = field(body, "stream")) r.stream = read_bool(*v, "stream");
    if (const json::Value* v = field(body, "return_token_ids")) r.return_token_ids = read_bool(*v, "return_token_ids");
    if (const json::Value* v = field(body, "return_tokens_as_token_ids"))
        r.return_tokens_as_token_ids = read_bool(*v, "return_tokens_as_token_ids");
    if (const json::Value* options = field(body, "stream_options")) {
        require_object(*options, "stream_options");
        if (const json::Value* v = field(*options, "include_usage"))
            r.include_usage = read_bool(*v, "stream_options.include_usage");
    }
    r.response_format = parse_response_format(body);
    r.guided = parse_guided(body);
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

SamplingConfig chat_sampling_defaults() {
    SamplingConfig c;
    c.max_tokens = 0;
    return c;
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
    r.legacy_functions = field(body, "functions") != nullptr;
    if (const json::Value* v = field(body, "model")) r.model = read_string(*v, "model");
    r.messages = parse_messages(body);
    r.tools = parse_tools(body);
    parse_tool_choice(body, r);
    parse_sampling(body, r);
    parse_outputs(body, r);
    parse_template_options(body, r);
    return r;
}

}  // namespace vllm::chat
