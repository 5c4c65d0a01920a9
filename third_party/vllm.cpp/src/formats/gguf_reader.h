// GGUF v2/v3 reader: header, metadata of every value type, tensor infos and
// an mmap of the file so tensor data is read in place. Format only: what the
// metadata means is model_config's and the tokenizer's business.
// Every read is bounds-checked; a truncated or corrupt file is a
// VLLM_ERR_MODEL_LOAD naming the path and what was wrong.
#pragma once
#include <cstdint>
#include <string>

#include "formats/mapped_file.h"
#include "formats/model_source.h"

namespace vllm {

class GgufFile : public ModelSource {
public:
    // Opens and parses the file; throws Error(VLLM_ERR_MODEL_LOAD).
    explicit GgufFile(const std::string& path);

    uint32_t version() const { return version_; }

    void release(const uint8_t* data, size_t n) const override { map_.release(data, n); }
    const FileIdentity* file_identity() const override { return &map_.identity(); }

private:
    MappedFile map_;
    uint32_t version_ = 0;
};

}  // namespace vllm
