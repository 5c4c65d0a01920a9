// The GGUF reader (formats/gguf_reader.h): header, metadata of every type and
// tensor infos from arbitrary bytes, then the tokenizer metadata read as the
// engine reads it.
#include "fuzz_common.h"
#include "formats/gguf_reader.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const fuzz::MemoryFile file(data, size);
    fuzz::refusals_allowed([&] {
        const vllm::GgufFile gguf(file.path());
        for (const auto& [key, value] : gguf.metadata()) (void)gguf.get_string(key, "");
        const vllm::TokenizerData tokenizer = vllm::TokenizerData::from_gguf(gguf);
        (void)vllm::Tokenizer::create(tokenizer)->encode("Hello, world! 123", true, true);
    });
    return 0;
}
