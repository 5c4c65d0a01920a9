#include "chat/tool_parsers/xml_tool_parsers.h"

#include "chat/tool_parsers/block_tool_parser.h"
#include "chat/tool_parsers/typed_arguments.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

// A function or parameter name: the text up to '>', on one line.
std::optional<std::string_view> tag_name(std::string_view text, size_t& pos) {
    const size_t close = text.find('>', pos);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view name = trim_space(text.substr(pos, close - pos));
    if (name.empty() || name.find_first_of("<\n") != std::string_view::npos) return std::nullopt;
    pos = close + 1;
    return name;
}

// "NAME>" and the parameters, up to the function's end (exclusive).
std::optional<BlockCall> read_qwen3_function(std::string_view text, const json::Value& tools) {
    size_t pos = 0;
    const std::optional<std::string_view> name = tag_name(text, pos);
    if (!name) return std::nullopt;
    BlockCall call{std::string(*name), json::Value::object(), ""};
    while ((pos = text.find(kParameter, pos)) != std::string_view::npos) {
        pos += kParameter.size();
        const std::optional<std::string_view> param = tag_name(text, pos);
        if (!param) return std::nullopt;
        const size_t end = std::min(text.find(kParameterEnd, pos), text.find(kParameter, pos));
        std::string_view value = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
        if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
        call.arguments.set(std::string(*param),
                           qwen3_coder_argument(value, tool_parameter_schema(tools, call.name, *param)));
        pos = end == std::string_view::npos ? text.size() : end;
    }
    return call;
}

std::optional<std::vector<BlockCall>> read_qwen3_block(size_t tag, std::string_view body, bool closed,
                                                       const json::Value& tools) {
    std::vector<BlockCall> calls;
    if (tag == 1) {  // a bare <function=...>: the body follows its "<function="
        if (!closed) return std::nullopt;
        std::optional<BlockCall> call = read_qwen3_function(body, tools);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
        return calls;
    }
    size_t pos = 0;
    while ((pos = body.find(kFunction, pos)) != std::string_view::npos) {
        pos += kFunction.size();
        size_t end = body.find(kFunctionEnd, pos);
        if (end == std::string_view::npos && !closed) return std::nullopt;
        if (end == std::string_view::npos) end = body.size();
        std::optional<BlockCall> call = read_qwen3_function(body.substr(pos, end - pos), tools);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
        pos = std::min(end + kFunctionEnd.size(), body.size());
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

std::optional<std::vector<BlockCall>> read_glm45_block(std::string_view body, bool closed, const json::Value& tools) {
    constexpr std::string_view kKey = "<arg_key>", kKeyEnd = "</arg_key>";
    constexpr std::string_view kValue = "<arg_value>", kValueEnd = "</arg_value>";
    if (!closed) return std::nullopt;
    const size_t name_end = std::min(body.find('\n'), body.find(kKey));
    const std::string_view name = trim_space(body.substr(0, name_end));
    if (name.empty() || name.find_first_of("{}\"<> \t") != std::string_view::npos) return std::nullopt;
    BlockCall call{std::string(name), json::Value::object(), ""};
    size_t pos = name_end == std::string_view::npos ? body.size() : name_end;
    while ((pos = body.find(kKey, pos)) != std::string_view::npos) {
        const size_t key_end = body.find(kKeyEnd, pos);
        if (key_end == std::string_view::npos) return std::nullopt;
        const std::string_view key = trim_space(body.substr(pos + kKey.size(), key_end - pos - kKey.size()));
        size_t value = key_end + kKeyEnd.size();
        value = body.find_first_not_of(" \t\r\n", value);
        if (value == std::string_view::npos || body.substr(value, kValue.size()) != kValue) return std::nullopt;
        value += kValue.size();
        const size_t value_end = body.find(kValueEnd, value);
        if (value_end == std::string_view::npos) return std::nullopt;
        call.arguments.set(std::string(key), glm45_argument(trim_space(body.substr(value, value_end - value)),
                                                            tool_parameter_schema(tools, call.name, key)));
        pos = value_end + kValueEnd.size();
    }
    return std::vector<BlockCall>{std::move(call)};
}

}  // namespace

std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools) {
    return std::make_unique<BlockToolParser>(
        std::move(ids), std::vector<BlockTags>{{"<tool_call>", "</tool_call>"}, {std::string(kFunction), std::string(kFunctionEnd)}},
        [tools](size_t tag, std::string_view body, bool closed) { return read_qwen3_block(tag, body, closed, tools); });
}

std::unique_ptr<ToolParser> make_glm45_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools) {
    return std::make_unique<BlockToolParser>(
        std::move(ids), std::vector<BlockTags>{{"<tool_call>", "</tool_call>"}},
        [tools](size_t, std::string_view body, bool closed) { return read_glm45_block(body, closed, tools); });
}

}  // namespace vllm::chat
