// Reads a Responses API request into the chat request it runs as
// (responses_request.h says what is read and what is refused).
#include "chat/responses_request.h"

#include <cstdint>
#include <set>

#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

using json::field;
using json::read_bool;
using json::read_string;
using json::require_array;
using json::require_object;
using json::required_string;
using json::wrong_type;

std::string indexed(const std::string& name, size_t i) { return name + "[" + std::to_string(i) + "]"; }

[[noreturn]] void not_supported(const std::string& name, const std::string& value, const std::string& what) {
    throw_invalid_argument("'" + name + "' '" + value + "' is not supported (" + what + ")");
}

// A content part's text: input_text / output_text / text parts, refusals;
// images, files and audio are refused (the engine is text-only).
std::string part_text(const json::Value& part, const std::string& name) {
    require_object(part, name);
    const std::string& type = required_string(part, "type", name);
    if (type == "input_text" || type == "output_text" || type == "text" || type == "reasoning_text" ||
        type == "summary_text")
        return required_string(part, "text", name);
    if (type == "refusal") return required_string(part, "refusal", name);
    not_supported(name + ".type", type, "text parts only: input_text, output_text, refusal");
}

// String content as is, an array of text parts joined with "\n".
std::string content_text(const json::Value* content, const std::string& name) {
    if (content == nullptr) return "";
    if (content->is_string()) return content->as_string();
    if (!content->is_array()) wrong_type(name, "a string or an array of content parts", *content);
    std::string joined;
    for (size_t i = 0; i < content->items().size(); ++i) {
        if (i > 0) joined += '\n';
        joined += part_text(content->items()[i], indexed(name, i));
    }
    return joined;
}

// The conversation's items as chat messages, in order: function_call items
// join the assistant message before them (one turn with its calls), a
// reasoning item is the next assistant message's reasoning_content.
class MessageBuilder {
public:
    json::Value messages = json::Value::array();

    void add(const json::Value& item, const std::string& name) {
        require_object(item, name);
        const json::Value* type_value = field(item, "type");
        const std::string type = type_value != nullptr ? read_string(*type_value, name + ".type") : "message";
        if (type == "message") return add_message(item, name);
        if (type == "function_call") return add_function_call(item, name);
        if (type == "function_call_output") return add_function_call_output(item, name);
        if (type == "reasoning") return add_reasoning(item, name);
        not_supported(name + ".type", type, "input items are message, function_call, function_call_output, reasoning");
    }

private:
    void add_message(const json::Value& item, const std::string& name) {
        const std::string& role = required_string(item, "role", name);
        if (role != "user" && role != "system" && role != "developer" && role != "assistant")
            throw_invalid_argument("'" + name + ".role' must be one of user, system, developer, assistant (got '" +
                                   role + "')");
        json::Value message = json::Value::object();
        message.set("role", role);
        message.set("content", content_text(field(item, "content"), name + ".content"));
        if (role == "assistant") take_reasoning(message);
        messages.push_back(std::move(message));
    }

    void add_function_call(const json::Value& item, const std::string& name) {
        const std::string& call_id = required_string(item, "call_id", name);
        const std::string& function = required_string(item, "name", name);
        const std::string& arguments_text = required_string(item, "arguments", name);
        json::Value arguments = json::Value::object();
        if (!arguments_text.empty()) {
            try {
                arguments = json::parse(arguments_text);
            } catch (const Error& e) {
                throw_invalid_argument("'" + name + ".arguments' is not valid JSON: " + e.what());
            }
        }
        json::Value call = json::Value::object();
        call.set("id", call_id);
        call.set("type", "function");
        json::Value fn = json::Value::object();
        fn.set("name", function);
        fn.set("arguments", std::move(arguments));
        call.set("function", std::move(fn));
        call_ids_.insert(call_id);

        json::Value* last = messages.items().empty() ? nullptr : &messages.items().back();
        if (last == nullptr || last->find("role")->as_string() != "assistant") {
            json::Value message = json::Value::object();
            message.set("role", "assistant");
            message.set("content", "");
            take_reasoning(message);
            messages.push_back(std::move(message));
            last = &messages.items().back();
        }
        if (!last->contains("tool_calls")) last->set("tool_calls", json::Value::array());
        last->find("tool_calls")->push_back(std::move(call));
    }

    void add_function_call_output(const json::Value& item, const std::string& name) {
        const std::string& call_id = required_string(item, "call_id", name);
        if (call_ids_.count(call_id) == 0)
            throw_invalid_argument("'" + name + ".call_id' '" + call_id +
                                   "' matches no function_call item before it");
        const json::Value* output = field(item, "output");
        if (output == nullptr) throw_invalid_argument("'" + name + ".output' is required");
        json::Value message = json::Value::object();
        message.set("role", "tool");
        message.set("tool_call_id", call_id);
        message.set("content", content_text(output, name + ".output"));
        messages.push_back(std::move(message));
    }

    void add_reasoning(const json::Value& item, const std::string& name) {
        const json::Value* content = field(item, "content");
        std::string text = content_text(content, name + ".content");
        if (content == nullptr) text = content_text(field(item, "summary"), name + ".summary");
        pending_reasoning_ += text;
    }

    void take_reasoning(json::Value& message) {
        if (pending_reasoning_.empty()) return;
        message.set("reasoning_content", pending_reasoning_);
        pending_reasoning_.clear();
    }

    std::set<std::string> call_ids_;
    std::string pending_reasoning_;
};

// `input` as a list of items.
json::Value input_items(const json::Value& body) {
    const json::Value* input = field(body, "input");
    if (input == nullptr) throw_invalid_argument("'input' is required");
    if (input->is_array()) return *input;
    if (!input->is_string()) wrong_type("input", "a string or an array of items", *input);
    const std::string& text = input->as_string();
    json::Value message = json::Value::object();
    message.set("type", "message");
    message.set("role", "user");
    message.set("content", text);
    json::Value items = json::Value::array();
    items.push_back(std::move(message));
    return items;
}

// Function tools as chat's; the echo keeps them as given.
json::Value chat_tools(const json::Value& tools) {
    require_array(tools, "tools");
    json::Value out = json::Value::array();
    for (size_t i = 0; i < tools.items().size(); ++i) {
        const json::Value& tool = tools.items()[i];
        const std::string name = indexed("tools", i);
        require_object(tool, name);
        const std::string& type = required_string(tool, "type", name);
        if (type != "function") not_supported(name + ".type", type, "function tools only");
        json::Value function = json::Value::object();
        function.set("name", required_string(tool, "name", name));
        if (const json::Value* d = field(tool, "description")) function.set("description", read_string(*d, name + ".description"));
        if (const json::Value* p = field(tool, "parameters")) {
            require_object(*p, name + ".parameters");
            function.set("parameters", *p);
        }
        if (const json::Value* s = field(tool, "strict")) read_bool(*s, name + ".strict");
        json::Value chat_tool = json::Value::object();
        chat_tool.set("type", "function");
        chat_tool.set("function", std::move(function));
        out.push_back(std::move(chat_tool));
    }
    return out;
}

json::Value chat_tool_choice(const json::Value& choice) {
    if (choice.is_string()) {
        const std::string& mode = choice.as_string();
        if (mode != "none" && mode != "auto" && mode != "required")
            throw_invalid_argument("'tool_choice' must be one of none, auto, required or a function (got '" + mode + "')");
        return choice;
    }
    if (!choice.is_object()) wrong_type("tool_choice", "a string or an object", choice);
    const std::string& type = required_string(choice, "type", "tool_choice");
    if (type != "function") not_supported("tool_choice.type", type, "function tools only");
    json::Value function = json::Value::object();
    function.set("name", required_string(choice, "name", "tool_choice"));
    json::Value out = json::Value::object();
    out.set("type", "function");
    out.set("function", std::move(function));
    return out;
}

// text.format as chat's response_format (null: plain text).
json::Value response_format(const json::Value& text) {
    require_object(text, "text");
    const json::Value* format = field(text, "format");
    if (format == nullptr) return nullptr;
    require_object(*format, "text.format");
    const std::string& type = required_string(*format, "type", "text.format");
    if (type == "text") return nullptr;
    json::Value out = json::Value::object();
    out.set("type", type);
    if (type == "json_object") return out;
    if (type != "json_schema") not_supported("text.format.type", type, "text, json_object, json_schema");
    json::Value schema = json::Value::object();
    schema.set("name", required_string(*format, "name", "text.format"));
    const json::Value* body = field(*format, "schema");
    if (body == nullptr) throw_invalid_argument("'text.format.schema' is required");
    require_object(*body, "text.format.schema");
    schema.set("schema", *body);
    if (const json::Value* strict = field(*format, "strict")) schema.set("strict", read_bool(*strict, "text.format.strict"));
    out.set("json_schema", std::move(schema));
    return out;
}

// Fields refused whenever they are set, with why.
void refuse_unsupported(const json::Value& body) {
    if (const json::Value* background = field(body, "background"); background && read_bool(*background, "background"))
        throw_invalid_argument("'background' true is not supported (responses run in the foreground)");
    if (field(body, "conversation") != nullptr)
        throw_invalid_argument("'conversation' is not supported (use previous_response_id)");
    if (field(body, "prompt") != nullptr) throw_invalid_argument("'prompt' (stored prompt templates) is not supported");
    if (field(body, "max_tool_calls") != nullptr) throw_invalid_argument("'max_tool_calls' is not supported");
    if (const json::Value* top = field(body, "top_logprobs"); top && json::read_integer(*top, "top_logprobs") != 0)
        throw_invalid_argument("'top_logprobs' is not supported");
}

// The sampling fields chat reads under the same names (it validates them).
constexpr const char* kSamplingFields[] = {"temperature", "top_p",   "top_k",     "min_p",
                                           "seed",        "stop",    "presence_penalty",
                                           "frequency_penalty",      "repetition_penalty",
                                           "min_tokens",  "ignore_eos", "priority", "chat_template_kwargs",
                                           "thinking_token_budget"};

void copy_or(json::Value& to, const json::Value& from, const char* key, json::Value fallback) {
    const json::Value* value = field(from, key);
    to.set(key, value != nullptr ? *value : std::move(fallback));
}

}  // namespace

ResponsesRequest read_responses_request(const json::Value& body, const json::Value& history) {
    require_object(body, "request");
    refuse_unsupported(body);
    ResponsesRequest out;
    if (const json::Value* stream = field(body, "stream")) out.stream = read_bool(*stream, "stream");
    if (const json::Value* store = field(body, "store")) out.store = read_bool(*store, "store");
    if (const json::Value* id = field(body, "previous_response_id")) read_string(*id, "previous_response_id");
    if (const json::Value* parallel = field(body, "parallel_tool_calls")) read_bool(*parallel, "parallel_tool_calls");
    if (const json::Value* metadata = field(body, "metadata")) require_object(*metadata, "metadata");

    json::Value chat = json::Value::object();
    if (const json::Value* model = field(body, "model")) chat.set("model", read_string(*model, "model"));

    MessageBuilder builder;
    if (const json::Value* instructions = field(body, "instructions")) {
        json::Value system = json::Value::object();
        system.set("role", "system");
        system.set("content", read_string(*instructions, "instructions"));
        builder.messages.push_back(std::move(system));
    }
    if (!history.is_null()) {
        require_array(history, "history");
        for (size_t i = 0; i < history.items().size(); ++i) builder.add(history.items()[i], indexed("history", i));
    }
    out.input_items = input_items(body);
    for (size_t i = 0; i < out.input_items.items().size(); ++i)
        builder.add(out.input_items.items()[i], indexed("input", i));
    if (builder.messages.items().empty()) throw_invalid_argument("'input' must hold at least one item");
    chat.set("messages", std::move(builder.messages));

    json::Value tools = json::Value::array();
    if (const json::Value* given = field(body, "tools")) {
        tools = *given;
        json::Value converted = chat_tools(*given);
        if (!converted.items().empty()) chat.set("tools", std::move(converted));
    }
    json::Value tool_choice = "auto";
    if (const json::Value* choice = field(body, "tool_choice")) {
        tool_choice = *choice;
        chat.set("tool_choice", chat_tool_choice(*choice));
    }
    json::Value text = json::Value::object();
    json::Value text_format = json::Value::object();
    text_format.set("type", "text");
    text.set("format", std::move(text_format));
    if (const json::Value* given = field(body, "text")) {
        json::Value format = response_format(*given);
        if (!format.is_null()) chat.set("response_format", std::move(format));
        if (field(*given, "format") != nullptr) text = *given;
    }
    if (const json::Value* max = field(body, "max_output_tokens"))
        chat.set("max_completion_tokens",
                 json::read_int32_in(*max, "max_output_tokens", 1, INT32_MAX, "at least 1"));
    for (const char* key : kSamplingFields)
        if (const json::Value* value = field(body, key)) chat.set(key, *value);
    // reasoning.effort is chat's reasoning_effort (the template's variable, gpt-oss's).
    if (const json::Value* reasoning = field(body, "reasoning")) {
        require_object(*reasoning, "reasoning");
        if (const json::Value* effort = field(*reasoning, "effort"))
            chat.set("reasoning_effort", read_string(*effort, "reasoning.effort"));
    }
    chat.set("stream", out.stream);
    if (out.stream) {
        json::Value options = json::Value::object();
        options.set("include_usage", true);
        chat.set("stream_options", std::move(options));
    }
    out.chat_request = std::move(chat);

    json::Value& echo = out.echo = json::Value::object();
    copy_or(echo, body, "instructions", nullptr);
    copy_or(echo, body, "max_output_tokens", nullptr);
    copy_or(echo, body, "metadata", json::Value::object());
    copy_or(echo, body, "model", "");
    copy_or(echo, body, "parallel_tool_calls", true);
    copy_or(echo, body, "previous_response_id", nullptr);
    copy_or(echo, body, "reasoning", nullptr);
    echo.set("store", out.store);
    copy_or(echo, body, "temperature", 1.0);
    echo.set("text", std::move(text));
    echo.set("tool_choice", std::move(tool_choice));
    echo.set("tools", std::move(tools));
    copy_or(echo, body, "top_p", 1.0);
    copy_or(echo, body, "truncation", "disabled");
    copy_or(echo, body, "user", nullptr);
    echo.set("background", false);
    return out;
}

}  // namespace vllm::chat
