#include "chat/tool_parsers/xml_tool_parsers.h"

#include "chat/tool_parsers/block_tool_parser.h"
#include "chat/tool_parsers/typed_arguments.h"

namespace vllm::chat {

namespace {

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

std::unique_ptr<ToolParser> make_glm45_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools) {
    return std::make_unique<BlockToolParser>(
        std::move(ids), std::vector<BlockTags>{{"<tool_call>", "</tool_call>"}},
        [tools](size_t, std::string_view body, bool closed) { return read_glm45_block(body, closed, tools); });
}

}  // namespace vllm::chat
