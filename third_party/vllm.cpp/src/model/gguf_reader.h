// GGUF v2/v3 reader: header, metadata of every value type, tensor infos and
// an mmap of the file so tensor data is read in place. Format only: what the
// metadata means is model_config's and the tokenizer's business.
// Every read is bounds-checked; a truncated or corrupt file is a
// VLLM_ERR_MODEL_LOAD naming the path and what was wrong.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/ggml_type.h"

namespace vllm {

enum class GgufValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    // Scalars: integers in `i` (signed) or `u` (unsigned), floats in `f`.
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0.0;
    std::string s;
    GgufValueType element_type = GgufValueType::UINT8;  // for ARRAY
    std::vector<GgufValue> array;

    bool is_integer() const;
    bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }
};

struct GgufTensor {
    std::string name;
    std::vector<int64_t> dims;  // GGUF order: dims[0] is the contiguous (row) length
    uint32_t type = 0;          // raw ggml type number
    uint64_t offset = 0;        // relative to the data section
    const uint8_t* data = nullptr;
    size_t nbytes = 0;

    int64_t elements() const;
    int64_t rows() const { return dims.empty() ? 0 : elements() / dims[0]; }
};

class GgufFile {
public:
    // Opens and parses the file; throws Error(VLLM_ERR_MODEL_LOAD).
    explicit GgufFile(const std::string& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }

    const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
    const GgufValue* find(const std::string& key) const;

    // Typed accessors: `fallback` when the key is absent; a present key of
    // the wrong type is a MODEL_LOAD error naming it.
    std::string get_string(const std::string& key, const std::string& fallback) const;
    int64_t get_int(const std::string& key, int64_t fallback) const;
    double get_float(const std::string& key, double fallback) const;
    bool get_bool(const std::string& key, bool fallback) const;
    // Present-or-throw versions.
    std::string require_string(const std::string& key) const;
    int64_t require_int(const std::string& key) const;
    // Arrays; empty when absent.
    std::vector<std::string> get_string_array(const std::string& key) const;
    std::vector<int64_t> get_int_array(const std::string& key) const;
    std::vector<double> get_float_array(const std::string& key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(const std::string& name) const;

    // Tells the OS that bytes [data, data + n) of the mapping (tensor data
    // copied elsewhere) will not be read again: the pages wholly inside are
    // dropped from memory (read back from the file should they be touched).
    void release(const uint8_t* data, size_t n) const;

private:
    [[noreturn]] void fail(const std::string& why) const;

    std::string path_;
    uint32_t version_ = 0;
    void* map_ = nullptr;
    size_t size_ = 0;
    std::map<std::string, GgufValue> metadata_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t> tensor_index_;
};

}  // namespace vllm
