// The reasoning parsers (chat/reasoning_parsers/) over arbitrary model
// output: the first byte picks the dialect and the prompt's ending, the
// second how the output is streamed; the rest is parsed whole, then fed in
// pieces.
#include "chat/chat_request.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    static const char* const kDialects[] = {"deepseek_r1", "qwen3",   "mistral",     "none",    "openai_gptoss",
                                            "glm45",       "granite", "deepseek_v3", "seed_oss"};
    static const char* const kPrompts[] = {"user: hi\nassistant:", "<think>\n", "[THINK]"};
    constexpr size_t kCount = sizeof(kDialects) / sizeof(kDialects[0]);
    const char* dialect = kDialects[data[0] % kCount];
    const char* prompt = kPrompts[(data[0] / kCount) % 3];
    const size_t piece = 1 + data[1] % 16;
    const std::string_view output = fuzz::text(data + 2, size - 2);
    const vllm::chat::ChatRequest request;
    fuzz::refusals_allowed([&] { (void)vllm::chat::make_reasoning_parser(dialect, request, prompt)->parse_all(output); });
    fuzz::refusals_allowed([&] {
        const auto parser = vllm::chat::make_reasoning_parser(dialect, request, prompt);
        for (size_t at = 0; at < output.size(); at += piece) (void)parser->feed(output.substr(at, piece));
        (void)parser->finish();
    });
    return 0;
}
