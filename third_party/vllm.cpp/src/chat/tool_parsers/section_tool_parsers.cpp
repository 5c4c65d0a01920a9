#include "chat/tool_parsers/section_tool_parsers.h"

#include "chat/tool_parsers/block_tool_parser.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kDeepSeekCall = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDeepSeekCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";

bool plain_name(std::string_view name) {
    return !name.empty() && name.find_first_of("<>{}\"\n\t ") == std::string_view::npos;
}

// Each call of a section read by `read_call`; nullopt when any is malformed.
template <typename ReadCall>
std::optional<std::vector<BlockCall>> read_section(std::string_view body, std::string_view open, std::string_view close,
                                                   ReadCall read_call) {
    const std::optional<std::vector<std::string_view>> parts = split_marked(body, open, close);
    if (!parts) return std::nullopt;
    std::vector<BlockCall> calls;
    for (std::string_view part : *parts) {
        std::optional<BlockCall> call = read_call(part);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
    }
    return calls;
}

std::optional<BlockCall> call_of(std::string_view name, std::string_view arguments, std::string id = "") {
    if (!plain_name(name)) return std::nullopt;
    std::optional<json::Value> args = try_parse_json(arguments);
    if (!args || !args->is_object()) return std::nullopt;
    return BlockCall{std::string(name), std::move(*args), std::move(id)};
}

// "function<｜tool▁sep｜>NAME\n```json\nARGS\n```"
std::optional<BlockCall> read_deepseek_v3_call(std::string_view call) {
    const size_t sep = call.find(kDeepSeekSep);
    if (sep == std::string_view::npos) return std::nullopt;
    std::string_view rest = call.substr(sep + kDeepSeekSep.size());
    const size_t fence = rest.find("```json");
    const size_t fence_end = rest.rfind("```");
    if (fence == std::string_view::npos || fence_end <= fence) return std::nullopt;
    if (!trim_space(rest.substr(fence_end + 3)).empty()) return std::nullopt;
    return call_of(trim_space(rest.substr(0, fence)), rest.substr(fence + 7, fence_end - fence - 7));
}

// "NAME<｜tool▁sep｜>ARGS"
std::optional<BlockCall> read_deepseek_v31_call(std::string_view call) {
    const size_t sep = call.find(kDeepSeekSep);
    if (sep == std::string_view::npos) return std::nullopt;
    return call_of(trim_space(call.substr(0, sep)), call.substr(sep + kDeepSeekSep.size()));
}

// "functions.NAME:INDEX<|tool_call_argument_begin|>ARGS"
std::optional<BlockCall> read_kimi_call(std::string_view call) {
    constexpr std::string_view kArguments = "<|tool_call_argument_begin|>";
    const size_t sep = call.find(kArguments);
    if (sep == std::string_view::npos) return std::nullopt;
    const std::string_view id = trim_space(call.substr(0, sep));
    std::string_view name = id.substr(0, id.find(':'));
    if (const size_t dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
    return call_of(name, call.substr(sep + kArguments.size()), std::string(id));
}

std::unique_ptr<ToolParser> deepseek_parser(ToolParser::IdGenerator ids, std::optional<BlockCall> (*read_call)(std::string_view)) {
    return std::make_unique<BlockToolParser>(
        std::move(ids), std::vector<BlockTags>{{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"}},
        [read_call](size_t, std::string_view body, bool) {
            return read_section(body, kDeepSeekCall, kDeepSeekCallEnd, read_call);
        });
}

}  // namespace

std::unique_ptr<ToolParser> make_deepseek_v3_tool_parser(ToolParser::IdGenerator ids) {
    return deepseek_parser(std::move(ids), read_deepseek_v3_call);
}

std::unique_ptr<ToolParser> make_deepseek_v31_tool_parser(ToolParser::IdGenerator ids) {
    return deepseek_parser(std::move(ids), read_deepseek_v31_call);
}

std::unique_ptr<ToolParser> make_kimi_k2_tool_parser(ToolParser::IdGenerator ids) {
    // Kimi's tokenizer spells the section tokens both ways ("calls" and "call").
    return std::make_unique<BlockToolParser>(
        std::move(ids),
        std::vector<BlockTags>{{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"},
                               {"<|tool_call_section_begin|>", "<|tool_call_section_end|>"}},
        [](size_t, std::string_view body, bool) {
            return read_section(body, "<|tool_call_begin|>", "<|tool_call_end|>", read_kimi_call);
        });
}

}  // namespace vllm::chat
