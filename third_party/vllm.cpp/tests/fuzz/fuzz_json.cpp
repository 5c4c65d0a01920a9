// The JSON reader (util/json.h): any bytes parse or are refused; what
// parses dumps to text that parses back to the same value.
#include "fuzz_common.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] {
        const vllm::json::Value value = vllm::json::parse(fuzz::text(data, size));
        const std::string dumped = vllm::json::dump(value);
        if (vllm::json::parse(dumped) != value) {
            std::fprintf(stderr, "JSON round trip changed the value: %s\n", dumped.c_str());
            std::abort();
        }
    });
    return 0;
}
