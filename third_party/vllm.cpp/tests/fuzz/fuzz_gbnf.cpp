// The GBNF parser (structured/gbnf_parser.h) through compile_gbnf.
#include "fuzz_common.h"
#include "structured/structured_output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::refusals_allowed([&] { (void)vllm::structured::compile_gbnf(fuzz::text(data, size)); });
    return 0;
}
