// One safetensors file (a whole model or one shard of it), memory-mapped:
// an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range in the data section, then the data. Tensors
// are read in place in their stored type (F32, F16, BF16; the others are
// refused naming the tensor), so resident memory stays about the file size.
// Every length, offset and shape in the header is checked against the file:
// a truncated file or a lying header is a MODEL_LOAD error naming the path.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtype/ggml_type.h"
#include "formats/mapped_file.h"

namespace vllm {

struct SafetensorsTensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> shape;  // row-major, as stored: shape.back() is contiguous
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
};

class SafetensorsFile {
public:
    // Opens, maps and validates the file; throws Error(VLLM_ERR_MODEL_LOAD).
    explicit SafetensorsFile(const std::string& path);
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    // In header order.
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    // The header's "__metadata__" (string to string; empty when absent).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Whether `data` points into this file's mapping.
    bool holds(const uint8_t* data) const { return data >= map_.data() && data < map_.data() + map_.size(); }
    void release(const uint8_t* data, size_t n) const { map_.release(data, n); }

    // MODEL_LOAD error "cannot load safetensors file '<path>': <why>".
    [[noreturn]] void fail(const std::string& why) const;

private:
    std::string path_;
    MappedFile map_;
    std::vector<SafetensorsTensor> tensors_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace vllm
