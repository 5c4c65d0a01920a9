// The /v1/chat/completions request reader (chat/chat_request.h): JSON text
// to a validated request, its sampling parameters and template messages.
#include "chat/chat_request.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] {
        const vllm::chat::ChatRequest request = vllm::chat::parse_chat_request(fuzz::text(data, size));
        std::vector<const char*> stop_storage;
        (void)vllm::chat::to_sampling_params(request, stop_storage);
    });
    return 0;
}
