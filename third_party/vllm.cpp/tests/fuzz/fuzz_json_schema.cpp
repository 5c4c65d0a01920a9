// The JSON Schema compiler (structured/json_schema.h) through
// compile_json_schema.
#include "fuzz_common.h"
#include "structured/structured_output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] { (void)vllm::structured::compile_json_schema(fuzz::text(data, size)); });
    return 0;
}
