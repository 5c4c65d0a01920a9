#include "chat/chat_response.h"

#include <cmath>

#include "engine/request_stream.h"
#include "util/utf8.h"

namespace vllm::chat {

namespace {

// A token may end inside a multi-byte character; its text must still be
// valid UTF-8 in JSON, so each byte that does not start a whole character
// becomes U+FFFD.
std::string displayable_token(const std::string& token) {
    if (utf8::is_valid(token)) return token;
    std::string out;
    size_t i = 0;
    while (i < token.size()) {
        size_t len = 0;
        for (size_t n = 1; n <= 4 && i + n <= token.size(); ++n) {
            if (utf8::is_valid(token.substr(i, n))) {
                len = n;
                break;
            }
        }
        if (len == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(token, i, len);
            i += len;
        }
    }
    return out;
}

json::Value token_bytes(const std::string& token) {
    json::Value bytes = json::Value::array();
    for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
    return bytes;
}

json::Value logprob_entry(const std::string& token, double logprob) {
    json::Value entry = json::Value::object();
    entry.set("token", displayable_token(token));
    entry.set("logprob", finite_logprob(logprob));
    entry.set("bytes", token_bytes(token));
    return entry;
}

json::Value logprobs_json(const std::optional<std::vector<TokenLogprob>>& logprobs) {
    if (!logprobs) return json::Value();
    json::Value content = json::Value::array();
    for (const TokenLogprob& t : *logprobs) {
        json::Value entry = logprob_entry(t.token, t.logprob);
        json::Value top = json::Value::array();
        for (const TopLogprob& alt : t.top_logprobs) top.push_back(logprob_entry(alt.token, alt.logprob));
        entry.set("top_logprobs", std::move(top));
        content.push_back(std::move(entry));
    }
    json::Value out = json::Value::object();
    out.set("content", std::move(content));
    return out;
}

json::Value function_json(const ToolCall& call) {
    json::Value function = json::Value::object();
    function.set("name", call.name);
    function.set("arguments", call.arguments);
    return function;
}

json::Value tool_call_json(const ToolCall& call) {
    json::Value out = json::Value::object();
    out.set("id", call.id);
    out.set("type", "function");
    out.set("function", function_json(call));
    return out;
}

json::Value message_json(const ChoiceParts& choice, bool legacy_function_call) {
    json::Value message = json::Value::object();
    message.set("role", "assistant");
    const bool content_is_null = choice.content.empty() && (!choice.tool_calls.empty() || choice.reasoning);
    message.set("content", content_is_null ? json::Value() : json::Value(choice.content));
    if (choice.reasoning) message.set("reasoning_content", *choice.reasoning);
    if (!choice.tool_calls.empty() && legacy_function_call) {
        message.set("function_call", function_json(choice.tool_calls.front()));
    } else if (!choice.tool_calls.empty()) {
        json::Value calls = json::Value::array();
        for (const ToolCall& call : choice.tool_calls) calls.push_back(tool_call_json(call));
        message.set("tool_calls", std::move(calls));
    }
    return message;
}

// The finish reason as the request's API names a call: "function_call" in the legacy one.
std::string api_finish_reason(std::string reason, bool legacy_function_call) {
    return legacy_function_call && reason == "tool_calls" ? "function_call" : reason;
}

json::Value usage_json(const Usage& usage) {
    json::Value out = json::Value::object();
    out.set("prompt_tokens", usage.prompt_tokens);
    out.set("completion_tokens", usage.completion_tokens);
    out.set("total_tokens", usage.prompt_tokens + usage.completion_tokens);
    return out;
}

}  // namespace

json::Value token_ids_json(const std::vector<int32_t>& ids) {
    json::Value out = json::Value::array();
    for (const int32_t id : ids) out.push_back(static_cast<int>(id));
    return out;
}

std::string reported_finish_reason(const std::string& engine_reason, bool made_tool_calls, bool forced_tool_call) {
    if (forced_tool_call && engine_reason == "length") return engine_reason;
    return made_tool_calls ? "tool_calls" : engine_reason;
}

std::string build_chat_completion(const ChatResponseParts& parts) {
    json::Value choices = json::Value::array();
    for (const ChoiceParts& choice : parts.choices) {
        json::Value c = json::Value::object();
        c.set("index", choice.index);
        c.set("message", message_json(choice, parts.legacy_function_call));
        c.set("logprobs", logprobs_json(choice.logprobs));
        c.set("finish_reason",
              api_finish_reason(reported_finish_reason(choice.finish_reason, !choice.tool_calls.empty(),
                                                       choice.forced_tool_call),
                                parts.legacy_function_call));
        if (choice.token_ids) c.set("token_ids", token_ids_json(*choice.token_ids));
        choices.push_back(std::move(c));
    }
    json::Value out = json::Value::object();
    out.set("id", parts.id);
    out.set("object", "chat.completion");
    out.set("created", parts.created);
    out.set("model", parts.model);
    out.set("choices", std::move(choices));
    out.set("usage", usage_json(parts.usage));
    if (parts.prompt_token_ids) out.set("prompt_token_ids", token_ids_json(*parts.prompt_token_ids));
    return json::dump(out);
}

ChatChunkWriter::ChatChunkWriter(std::string id, int64_t created, std::string model, bool legacy_function_call)
    : id_(std::move(id)), created_(created), model_(std::move(model)), legacy_function_call_(legacy_function_call) {}

json::Value ChatChunkWriter::chunk(json::Value choices) const {
    json::Value out = json::Value::object();
    out.set("id", id_);
    out.set("object", "chat.completion.chunk");
    out.set("created", created_);
    out.set("model", model_);
    out.set("choices", std::move(choices));
    return out;
}

namespace {
json::Value one_choice(int index, json::Value delta, json::Value logprobs, json::Value finish_reason) {
    json::Value choice = json::Value::object();
    choice.set("index", index);
    choice.set("delta", std::move(delta));
    choice.set("logprobs", std::move(logprobs));
    choice.set("finish_reason", std::move(finish_reason));
    json::Value choices = json::Value::array();
    choices.push_back(std::move(choice));
    return choices;
}
}  // namespace

std::string ChatChunkWriter::role_chunk(int index, const std::vector<int32_t>* prompt_token_ids) const {
    json::Value delta = json::Value::object();
    delta.set("role", "assistant");
    delta.set("content", "");
    json::Value out = chunk(one_choice(index, std::move(delta), json::Value(), json::Value()));
    if (prompt_token_ids) out.set("prompt_token_ids", token_ids_json(*prompt_token_ids));
    return json::dump(out);
}

std::string ChatChunkWriter::delta_chunk(int index, const ChoiceDelta& d) {
    if (d.empty()) return "";
    json::Value delta = json::Value::object();
    if (!d.reasoning.empty()) delta.set("reasoning_content", d.reasoning);
    if (!d.content.empty()) delta.set("content", d.content);
    if (!d.tool_calls.empty() && legacy_function_call_) {
        for (const ToolCallDelta& t : d.tool_calls) {
            if (t.index != 0) continue;  // the legacy API's one call
            json::Value function = function_json(t.call);
            if (t.continues()) function.erase("name");  // more arguments of the call named before
            delta.set("function_call", std::move(function));
        }
        made_tool_calls_.insert(index);
        if (delta.members().empty() && !d.logprobs && d.token_ids.empty()) return "";
    } else if (!d.tool_calls.empty()) {
        json::Value calls = json::Value::array();
        for (const ToolCallDelta& t : d.tool_calls) {
            // A call's first delta names it; the ones after carry argument fragments only.
            json::Value call = json::Value::object();
            if (t.continues()) {
                json::Value function = json::Value::object();
                function.set("arguments", t.call.arguments);
                call.set("function", std::move(function));
            } else {
                call = tool_call_json(t.call);
            }
            call.set("index", t.index);
            calls.push_back(std::move(call));
        }
        delta.set("tool_calls", std::move(calls));
        made_tool_calls_.insert(index);
    }
    json::Value choices = one_choice(index, std::move(delta), logprobs_json(d.logprobs), json::Value());
    if (!d.token_ids.empty())
        choices.items()[0].set("token_ids", token_ids_json(d.token_ids));
    return json::dump(chunk(std::move(choices)));
}

std::string ChatChunkWriter::finish_chunk(int index, const std::string& finish_reason, bool forced_tool_call) const {
    const bool tool_calls = made_tool_calls_.count(index) > 0;
    return json::dump(chunk(one_choice(
        index, json::Value::object(), json::Value(),
        api_finish_reason(reported_finish_reason(finish_reason, tool_calls, forced_tool_call), legacy_function_call_))));
}

std::string ChatChunkWriter::usage_chunk(const Usage& usage) const {
    json::Value out = chunk(json::Value::array());
    out.set("usage", usage_json(usage));
    return json::dump(out);
}

}  // namespace vllm::chat
