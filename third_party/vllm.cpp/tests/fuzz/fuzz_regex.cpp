// The regex compiler (structured/regex.h) through compile_regex.
#include "fuzz_common.h"
#include "structured/structured_output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] { (void)vllm::structured::compile_regex(fuzz::text(data, size)); });
    return 0;
}
