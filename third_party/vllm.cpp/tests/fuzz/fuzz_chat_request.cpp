// The /v1/chat/completions request reader (chat/chat_request.h): JSON text
// to a validated request, its sampling config and template messages.
#include "chat/chat_request.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] {
        (void)vllm::chat::parse_chat_request(fuzz::text(data, size));
    });
    return 0;
}
