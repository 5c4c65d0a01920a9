#include "chat/tool_parsers/tool_parser.h"

#include "chat/openai_protocol.h"
#include "chat/tool_parsers/harmony_tool_parser.h"
#include "chat/tool_parsers/hermes_tool_parser.h"
#include "chat/tool_parsers/json_list_tool_parser.h"
#include "chat/tool_parsers/llama3_json_tool_parser.h"
#include "chat/tool_parsers/mistral_tool_parser.h"
#include "chat/tool_parsers/pythonic_tool_parser.h"
#include "chat/tool_parsers/qwen3_coder_tool_parser.h"
#include "chat/tool_parsers/section_tool_parsers.h"
#include "chat/tool_parsers/xml_tool_parsers.h"
#include "util/error.h"

namespace vllm::chat {

ToolParseResult ToolParser::parse_all(std::string_view text) {
    ToolParseResult result;
    accumulate(result, feed(text));
    accumulate(result, finish());
    return result;
}

ToolDelta ToolParser::finish() {
    ToolDelta out;
    finish_markup(out);
    out.content += held_space_;
    held_space_.clear();
    return out;
}

void ToolParser::emit_call(const std::string& name, const json::Value& arguments, ToolDelta& out, std::string id) {
    begin_call(name, out, std::move(id));
    out.calls.back().call.arguments = arguments_json(arguments);
}

int ToolParser::begin_call(const std::string& name, ToolDelta& out, std::string id) {
    // Whitespace after real content stays with it ("Let me check.\n"); alone it goes.
    if (content_started_) out.content += held_space_;
    held_space_.clear();
    out.calls.push_back({calls_made_, {id.empty() ? ids_() : std::move(id), name, ""}});
    return calls_made_++;
}

void ToolParser::continue_call(int index, std::string_view arguments, ToolDelta& out) {
    if (!arguments.empty()) append_call_delta(out.calls, {index, {"", "", std::string(arguments)}});
}

bool ToolParser::stream_arguments(StreamedCall& call, const std::string& name, std::string_view arguments,
                                  bool at_end, CommitAt commit, ToolDelta& out) {
    call.arguments.read(arguments, at_end);
    const bool committed =
        commit == CommitAt::FirstKey ? call.arguments.has_member_key() : call.arguments.has_member_value();
    if (call.index < 0 && !committed) return false;
    if (call.index < 0) call.index = begin_call(name, out);
    continue_call(call.index, std::string_view(call.arguments.canonical()).substr(call.sent), out);
    call.sent = call.arguments.canonical().size();
    return true;
}

bool ToolParser::stream_call_object(StreamedCall& call, std::string_view object, bool at_end, bool accept_parameters,
                                    CommitAt commit, ToolDelta& out) {
    if (call.head.state == CallHead::State::NotYet) call.head = read_call_head(object, accept_parameters);
    if (call.head.state != CallHead::State::Found) return false;
    return stream_arguments(call, call.head.name, object.substr(call.head.arguments_at), at_end, commit, out);
}

bool ToolParser::emit_call_object(const json::Value& object, bool accept_parameters, ToolDelta& out) {
    if (!object.is_object()) return false;
    const json::Value* name = object.find("name");
    if (name == nullptr || !name->is_string() || name->as_string().empty()) return false;
    const json::Value* arguments = object.find("arguments");
    if (arguments == nullptr && accept_parameters) arguments = object.find("parameters");
    if (arguments == nullptr) return false;
    emit_call(name->as_string(), *arguments, out);
    return true;
}

void ToolParser::emit_outside_text(std::string_view text, ToolDelta& out) {
    if (calls_made_ == 0) emit_content(text, out);
}

void ToolParser::emit_content(std::string_view text, ToolDelta& out) {
    const size_t last = text.find_last_not_of(" \t\r\n");
    if (last == std::string_view::npos) {
        held_space_ += text;
        return;
    }
    out.content += held_space_;
    out.content += text.substr(0, last + 1);
    held_space_ = std::string(text.substr(last + 1));
    content_started_ = true;
}

void accumulate(ToolParseResult& result, const ToolDelta& delta) {
    result.content += delta.content;
    for (const ToolCallDelta& d : delta.calls) {
        if (d.continues() && d.index >= 0 && static_cast<size_t>(d.index) < result.calls.size())
            result.calls[static_cast<size_t>(d.index)].arguments += d.call.arguments;
        else
            result.calls.push_back(d.call);
    }
}

void append_call_delta(std::vector<ToolCallDelta>& calls, const ToolCallDelta& delta) {
    if (delta.continues() && !calls.empty() && calls.back().index == delta.index)
        calls.back().call.arguments += delta.call.arguments;
    else
        calls.push_back(delta);
}

std::optional<json::Value> try_parse_json(std::string_view text) {
    try {
        return json::parse(text);
    } catch (const Error&) {
        return std::nullopt;
    }
}

std::unique_ptr<ToolParser> make_tool_parser(std::string_view name, ToolParser::IdGenerator ids,
                                             const json::Value& tools) {
    if (name == "mistral") return std::make_unique<MistralToolParser>(ids ? ids : make_mistral_tool_call_id);
    if (!ids) ids = make_tool_call_id;
    if (name == "hermes") return std::make_unique<HermesToolParser>(ids);
    if (name == "llama3_json") return std::make_unique<Llama3JsonToolParser>(ids);
    // vLLM's llama4_pythonic is pythonic that also reads Llama 4's <|python_start|> tags, as ours does.
    if (name == "pythonic" || name == "llama4_pythonic") return std::make_unique<PythonicToolParser>(ids);
    if (name == "qwen3_coder") return make_qwen3_coder_tool_parser(ids, tools);
    if (name == "glm45") return make_glm45_tool_parser(ids, tools);
    if (name == "deepseek_v3") return make_deepseek_v3_tool_parser(ids);
    if (name == "deepseek_v31") return make_deepseek_v31_tool_parser(ids);
    if (name == "kimi_k2") return make_kimi_k2_tool_parser(ids);
    if (name == "granite") return std::make_unique<JsonListToolParser>(ids, JsonListToolParser::Form::Granite);
    if (name == "phi4_mini_json") return std::make_unique<JsonListToolParser>(ids, JsonListToolParser::Form::Phi4Mini);
    if (name == "openai") return std::make_unique<HarmonyToolParser>(ids);
    throw_invalid_argument("unknown tool_parser '" + std::string(name) +
                           "' (known: hermes, llama3_json, mistral, pythonic, llama4_pythonic, qwen3_coder, glm45, "
                           "deepseek_v3, deepseek_v31, kimi_k2, granite, phi4_mini_json, openai)");
}

bool tool_parser_reads_special_tokens(std::string_view name) {
    for (std::string_view n : {"qwen3_coder", "glm45", "deepseek_v3", "deepseek_v31", "kimi_k2", "granite", "openai"})
        if (name == n) return true;
    return false;
}

std::string detect_tool_parser(std::string_view template_source) {
    auto has = [&](std::string_view marker) { return template_source.find(marker) != std::string_view::npos; };
    if (has("<|channel|>")) return "openai";  // gpt-oss's harmony
    if (has("[TOOL_CALLS]")) return "mistral";
    if (has("<|tool_calls_section_begin|>") || has("<|tool_call_section_begin|>")) return "kimi_k2";
    // DeepSeek-V3 (and R1) fence the arguments in ```json; V3.1 writes them bare.
    if (has("<｜tool▁calls▁begin｜>")) return has("```json") ? "deepseek_v3" : "deepseek_v31";
    if (has("<function=")) return "qwen3_coder";  // Qwen3-Coder, Qwen3.5/3.6
    if (has("<arg_key>")) return "glm45";
    if (has("<|tool_call|>")) return "granite";
    // Phi-4-mini lists tools between <|tool|> and <|/tool|>; it answers functools[...].
    if (has("<|tool|>") && has("<|/tool|>")) return "phi4_mini_json";
    if (has("<tool_call>")) return "hermes";
    // vLLM's pythonic Llama templates describe calls as "[func_name1(params_name1=...".
    if (has("[func_name1(")) return has("<|header_start|>") ? "llama4_pythonic" : "pythonic";
    // Llama 3.1/3.2 ask for {"name": function name, "parameters": ...}.
    if (has("<|python_tag|>") || has("\"name\": function name")) return "llama3_json";
    return "";
}

}  // namespace vllm::chat
