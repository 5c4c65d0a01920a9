// The /v1/completions request reader (chat/completion_request.h): JSON text
// to a validated request (prompts of every shape, echo, logprobs, the fields
// it shares with chat through chat/openai_request.h).
#include "chat/completion_request.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] {
        (void)vllm::chat::parse_completion_request(fuzz::text(data, size));
    });
    return 0;
}
