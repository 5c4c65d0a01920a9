// The safetensors reader (formats/safetensors_file.h): the header's length,
// its JSON, dtypes, shapes and offsets checked against the file.
#include "fuzz_common.h"
#include "formats/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const fuzz::MemoryFile file(data, size);
    fuzz::refusals_allowed([&] {
        const vllm::SafetensorsFile st(file.path());
        // Each tensor's first and last byte: ASan checks they are inside the file.
        volatile uint8_t sink = 0;
        for (const vllm::SafetensorsTensor& t : st.tensors()) {
            if (t.nbytes > 0) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
        }
    });
    return 0;
}
