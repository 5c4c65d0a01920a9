// Anthropic Messages request -> OpenAI chat request (messages_request.h).
#include "chat/messages_request.h"

#include <cstdint>
#include <set>
#include <utility>

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

// Block types Anthropic defines that the engine cannot take (it reads text
// only and runs no server tools): refused by name rather than as unknown.
bool is_unsupported_block(const std::string& type) {
    static const std::set<std::string> kUnsupported = {
        "image", "document", "search_result", "redacted_thinking", "server_tool_use", "web_search_tool_result",
        "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result", "container_upload"};
    return kUnsupported.count(type) > 0;
}

[[noreturn]] void refuse_block(const std::string& name, const std::string& type, const std::string& allowed) {
    if (is_unsupported_block(type))
        throw_invalid_argument("'" + name + ".type' '" + type +
                               "' is not supported: the engine reads text only and runs no server tools");
    throw_invalid_argument("'" + name + ".type' must be one of " + allowed + " (got '" + type + "')");
}

const std::string& block_type(const json::Value& block, const std::string& name) {
    require_object(block, name);
    return required_string(block, "type", name);
}

// A text block's text ({"type": "text", "text": ...}; citations and
// cache_control are accepted: prefix caching is automatic).
const std::string& text_of(const json::Value& block, const std::string& name) {
    return required_string(block, "text", name);
}

// `system`, or a tool_result's content: a string, or text blocks joined.
std::string text_blocks(const json::Value& content, const std::string& name) {
    if (content.is_string()) return content.as_string();
    if (!content.is_array()) wrong_type(name, "a string or an array of text blocks", content);
    std::string joined;
    for (size_t i = 0; i < content.items().size(); ++i) {
        const std::string item = name + "[" + std::to_string(i) + "]";
        const json::Value& block = content.items()[i];
        const std::string& type = block_type(block, item);
        if (type != "text") refuse_block(item, type, "text");
        if (i > 0) joined += '\n';
        joined += text_of(block, item);
    }
    return joined;
}

json::Value message(const char* role, std::string content) {
    json::Value m = json::Value::object();
    m.set("role", role);
    m.set("content", std::move(content));
    return m;
}

void append_text(std::string& to, const std::string& text) {
    if (!to.empty()) to += '\n';
    to += text;
}

// Reads the `messages` array into OpenAI chat messages (after `out`'s
// system message); returns whether the last turn is the assistant's.
bool translate_messages(const json::Value& messages, json::Value& out) {
    require_array(messages, "messages");
    if (messages.items().empty()) throw_invalid_argument("'messages' must not be empty");
    std::set<std::string> tool_use_ids;    // of earlier assistant turns
    std::vector<std::pair<std::string, std::string>> tool_names;  // id -> name, for the tool messages
    bool last_is_assistant = false;
    for (size_t i = 0; i < messages.items().size(); ++i) {
        const std::string name = "messages[" + std::to_string(i) + "]";
        const json::Value& turn = messages.items()[i];
        require_object(turn, name);
        const std::string& role = required_string(turn, "role", name);
        if (role != "user" && role != "assistant")
            throw_invalid_argument("'" + name + ".role' must be one of user, assistant (got '" + role + "')");
        const json::Value* content = field(turn, "content");
        if (content == nullptr) throw_invalid_argument("'" + name + ".content' is required");
        last_is_assistant = role == "assistant";
        if (content->is_string()) {
            out.push_back(message(role.c_str(), content->as_string()));
            continue;
        }
        if (!content->is_array()) wrong_type(name + ".content", "a string or an array of content blocks", *content);
        std::string text, thinking;
        bool answered_tools = false;
        json::Value tool_calls = json::Value::array();
        for (size_t j = 0; j < content->items().size(); ++j) {
            const std::string item = name + ".content[" + std::to_string(j) + "]";
            const json::Value& block = content->items()[j];
            const std::string& type = block_type(block, item);
            if (type == "text") {
                append_text(text, text_of(block, item));
            } else if (role == "assistant" && type == "tool_use") {
                const std::string& id = required_string(block, "id", item);
                const std::string& tool = required_string(block, "name", item);
                const json::Value* input = field(block, "input");
                if (input == nullptr) throw_invalid_argument("'" + item + ".input' is required");
                require_object(*input, item + ".input");
                json::Value function = json::Value::object();
                function.set("name", tool);
                function.set("arguments", json::dump(*input));
                json::Value call = json::Value::object();
                call.set("id", id);
                call.set("type", "function");
                call.set("function", std::move(function));
                tool_calls.push_back(std::move(call));
                tool_use_ids.insert(id);
                tool_names.emplace_back(id, tool);
            } else if (role == "assistant" && type == "thinking") {
                append_text(thinking, required_string(block, "thinking", item));
            } else if (role == "user" && type == "tool_result") {
                const std::string& id = required_string(block, "tool_use_id", item);
                if (tool_use_ids.count(id) == 0)
                    throw_invalid_argument("'" + item + ".tool_use_id' '" + id +
                                           "' answers no tool_use block of an earlier assistant turn");
                if (const json::Value* error = field(block, "is_error")) read_bool(*error, item + ".is_error");
                const json::Value* result = field(block, "content");
                json::Value tool = message("tool", result != nullptr ? text_blocks(*result, item + ".content") : "");
                tool.set("tool_call_id", id);
                for (const auto& [use_id, use_name] : tool_names)
                    if (use_id == id) tool.set("name", use_name);
                out.push_back(std::move(tool));
                answered_tools = true;
            } else {
                refuse_block(item, type,
                             role == "assistant" ? "text, tool_use, thinking" : "text, tool_result");
            }
        }
        if (role == "user") {
            // A turn of only tool results has no user message of its own.
            if (!text.empty() || !answered_tools) out.push_back(message("user", text));
            continue;
        }
        json::Value assistant = message("assistant", text);
        if (!thinking.empty()) assistant.set("reasoning_content", thinking);
        if (!tool_calls.items().empty()) assistant.set("tool_calls", std::move(tool_calls));
        out.push_back(std::move(assistant));
    }
    return last_is_assistant;
}

json::Value translate_tools(const json::Value& tools) {
    require_array(tools, "tools");
    json::Value out = json::Value::array();
    for (size_t i = 0; i < tools.items().size(); ++i) {
        const std::string name = "tools[" + std::to_string(i) + "]";
        const json::Value& tool = tools.items()[i];
        require_object(tool, name);
        if (const json::Value* type = field(tool, "type")) {
            const std::string& kind = read_string(*type, name + ".type");
            if (kind != "custom")
                throw_invalid_argument("'" + name + ".type' '" + kind +
                                       "' is a server tool, which is not supported: only custom tools "
                                       "(name, description, input_schema) are");
        }
        json::Value function = json::Value::object();
        function.set("name", required_string(tool, "name", name));
        if (const json::Value* description = field(tool, "description"))
            function.set("description", read_string(*description, name + ".description"));
        const json::Value* schema = field(tool, "input_schema");
        if (schema == nullptr) throw_invalid_argument("'" + name + ".input_schema' is required");
        require_object(*schema, name + ".input_schema");
        function.set("parameters", *schema);
        json::Value entry = json::Value::object();
        entry.set("type", "function");
        entry.set("function", std::move(function));
        out.push_back(std::move(entry));
    }
    return out;
}

json::Value translate_tool_choice(const json::Value& choice) {
    require_object(choice, "tool_choice");
    const std::string& type = required_string(choice, "type", "tool_choice");
    if (const json::Value* v = field(choice, "disable_parallel_tool_use"))
        read_bool(*v, "tool_choice.disable_parallel_tool_use");  // every call found is returned, as vLLM does
    if (type == "auto") return "auto";
    if (type == "any") return "required";
    if (type == "none") return "none";
    if (type == "tool") {
        json::Value function = json::Value::object();
        function.set("name", required_string(choice, "name", "tool_choice"));
        json::Value named = json::Value::object();
        named.set("type", "function");
        named.set("function", std::move(function));
        return named;
    }
    throw_invalid_argument("'tool_choice.type' must be one of auto, any, tool, none (got '" + type + "')");
}

// `thinking`: {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}:
// the template's enable_thinking, and N as chat's thinking_token_budget.
void translate_thinking(const json::Value& thinking, json::Value& kwargs, json::Value& chat) {
    require_object(thinking, "thinking");
    const std::string& type = required_string(thinking, "type", "thinking");
    if (type == "disabled") {
        kwargs.set("enable_thinking", false);
        return;
    }
    if (type != "enabled") throw_invalid_argument("'thinking.type' must be one of enabled, disabled (got '" + type + "')");
    const json::Value* budget = field(thinking, "budget_tokens");
    if (budget == nullptr) throw_invalid_argument("'thinking.budget_tokens' is required");
    kwargs.set("enable_thinking", true);
    chat.set("thinking_token_budget", json::read_int32_in(*budget, "thinking.budget_tokens", 1, INT32_MAX, "at least 1"));
}

}  // namespace

MessagesRequest translate_messages_request(std::string_view request_json, bool count_tokens) {
    const json::Value body = json::parse_object(request_json, "the request");
    MessagesRequest request;
    json::Value chat = json::Value::object();
    if (const json::Value* model = field(body, "model")) chat.set("model", read_string(*model, "model"));

    json::Value messages = json::Value::array();
    if (const json::Value* system = field(body, "system")) messages.push_back(message("system", text_blocks(*system, "system")));
    const json::Value* turns = field(body, "messages");
    if (turns == nullptr) throw_invalid_argument("'messages' is required");
    if (translate_messages(*turns, messages)) {  // a prefill: continued, not answered
        chat.set("add_generation_prompt", false);
        chat.set("continue_final_message", true);
    }
    chat.set("messages", std::move(messages));

    if (const json::Value* tools = field(body, "tools")) {
        json::Value translated = translate_tools(*tools);
        if (!translated.items().empty()) chat.set("tools", std::move(translated));
    }
    if (const json::Value* choice = field(body, "tool_choice")) {
        json::Value translated = translate_tool_choice(*choice);
        if (chat.contains("tools"))
            chat.set("tool_choice", std::move(translated));
        else if (!(translated == json::Value("none")) && !(translated == json::Value("auto")))
            throw_invalid_argument("'tool_choice' names a tool use but the request has no 'tools'");
    }
    // Counting renders the same prompt (tools reach the template whatever
    // the choice) without the forced-call grammar or the tool parser that
    // generating would need.
    if (count_tokens && chat.contains("tools")) chat.set("tool_choice", "none");
    json::Value kwargs = json::Value::object();
    if (const json::Value* thinking = field(body, "thinking")) translate_thinking(*thinking, kwargs, chat);
    if (kwargs.size() > 0) chat.set("chat_template_kwargs", std::move(kwargs));
    if (count_tokens) {
        chat.erase("thinking_token_budget");  // counting generates nothing to bound
        request.chat_request_json = json::dump(chat);
        return request;
    }

    const json::Value* max_tokens = field(body, "max_tokens");
    if (max_tokens == nullptr) throw_invalid_argument("'max_tokens' is required");
    chat.set("max_tokens", static_cast<int64_t>(json::read_int32_in(*max_tokens, "max_tokens", 1, INT32_MAX,
                                                                   "at least 1")));
    if (const json::Value* stop = field(body, "stop_sequences")) {
        require_array(*stop, "stop_sequences");
        for (size_t i = 0; i < stop->items().size(); ++i)
            request.stop_sequences.push_back(read_string(stop->items()[i], "stop_sequences[" + std::to_string(i) + "]"));
        chat.set("stop", *stop);
    }
    // lora_int_id: the adapter a server chose by the request's model (as a chat body names it).
    for (const char* name : {"temperature", "top_p", "top_k", "lora_int_id"})
        if (const json::Value* v = field(body, name)) chat.set(name, *v);  // the chat parser checks them
    if (const json::Value* metadata = field(body, "metadata")) {
        require_object(*metadata, "metadata");
        if (const json::Value* user = field(*metadata, "user_id")) read_string(*user, "metadata.user_id");
    }
    if (const json::Value* stream = field(body, "stream")) request.stream = read_bool(*stream, "stream");
    chat.set("stream", request.stream);
    request.chat_request_json = json::dump(chat);
    return request;
}

}  // namespace vllm::chat
