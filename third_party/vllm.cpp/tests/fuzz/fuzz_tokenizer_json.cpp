// The tokenizer.json loader (tokenizer/hf_tokenizer_json.h), then the
// tokenizer it builds encoding and decoding a fixed text.
#include "fuzz_common.h"
#include "tokenizer/hf_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const fuzz::MemoryFile file(data, size);
    fuzz::refusals_allowed([&] {
        const auto tokenizer = vllm::load_hf_tokenizer_json(file.path());
        const std::vector<int32_t> ids = tokenizer->encode("<s>Hello  w\xC3\xB6rld\t<|sp|> 123 e\xCC\x81", true, true);
        vllm::IncrementalDetokenizer detokenizer(*tokenizer);
        for (int32_t id : ids) (void)detokenizer.push(id);
        (void)detokenizer.flush();
    });
    return 0;
}
