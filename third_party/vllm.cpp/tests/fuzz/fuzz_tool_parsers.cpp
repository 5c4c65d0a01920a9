// The tool-call parsers (chat/tool_parsers/) over arbitrary model output:
// the first byte picks the dialect, the second how the output is streamed;
// the rest is parsed whole, then fed in pieces.
#include <memory>

#include "chat/tool_parsers/forced_tool_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "util/json.h"
#include "fuzz_common.h"

namespace {

std::unique_ptr<vllm::chat::ToolParser> make_parser(uint8_t choice) {
    // The first four keep their seeds' bytes; the forced parsers follow them, then the families of issue 42.
    static const char* const kDialects[] = {"hermes", "llama3_json", "mistral", "pythonic", "", "",
                                            "qwen3_coder", "glm45", "deepseek_v3", "deepseek_v31", "kimi_k2",
                                            "granite", "phi4_mini_json", "llama4_pythonic", "openai"};
    static const vllm::json::Value tools = vllm::json::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {)"
        R"("n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"}, "o": {"type": "object"}}}}}])");
    const auto ids = [] { return std::string("call_0"); };
    const size_t dialect = choice % (sizeof(kDialects) / sizeof(kDialects[0]));
    switch (dialect) {
        case 4: return std::make_unique<vllm::chat::ForcedToolParser>("", ids);
        case 5: return std::make_unique<vllm::chat::ForcedToolParser>("get_weather", ids);
        default: return vllm::chat::make_tool_parser(kDialects[dialect], ids, tools);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const uint8_t choice = data[0];
    const size_t piece = 1 + data[1] % 16;
    const std::string_view output = fuzz::text(data + 2, size - 2);
    fuzz::refusals_allowed([&] { (void)make_parser(choice)->parse_all(output); });
    fuzz::refusals_allowed([&] {
        const auto parser = make_parser(choice);
        vllm::chat::ToolParseResult streamed;
        for (size_t at = 0; at < output.size(); at += piece) {
            vllm::chat::accumulate(streamed, parser->feed(output.substr(at, piece)));
        }
        vllm::chat::accumulate(streamed, parser->finish());
    });
    return 0;
}
