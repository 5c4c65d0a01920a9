// What the model layer reads a model through, whatever its format:
// metadata under GGUF's keys (`general.architecture`, `<arch>.block_count`,
// ...) and tensors under llama.cpp's names (`blk.N.attn_q.weight`, ...).
// A GGUF file (gguf_reader.h) is one as stored; a Hugging Face directory is
// translated into the same keys and names by its loader, so an
// architecture's hyperparameters (model_config) and tensor set (weights)
// are written once for both.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtype/ggml_type.h"
#include "formats/file_identity.h"

namespace vllm {

enum class GgufValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

bool gguf_is_integer(GgufValueType type);  // bool included
bool gguf_is_float(GgufValueType type);

struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    // Scalars: integers in `i` (signed) or `u` (unsigned), floats in `f`.
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0.0;
    std::string s;

    // ARRAY: the elements are packed, not one GgufValue each (96 bytes: a
    // 262,144-token vocabulary's tokens, scores and types took 75 MB that
    // way); array_size() and element() read them.
    GgufValueType element_type = GgufValueType::UINT8;
    std::vector<uint8_t> packed_scalars;  // as stored in the file (little-endian)
    std::string packed_strings;           // string elements back to back
    std::vector<uint64_t> string_ends;    // end of string k in packed_strings
    std::vector<GgufValue> nested;        // arrays of arrays

    bool is_integer() const { return gguf_is_integer(type); }
    bool is_float() const { return gguf_is_float(type); }

    size_t array_size() const;
    // Element k of an array of scalars or strings, as a scalar value.
    GgufValue element(size_t k) const;
};

// The bytes a scalar of this type takes in a GGUF file (0 for STRING and
// ARRAY, whose length is stored with them).
size_t gguf_scalar_size(GgufValueType type);
// A scalar read from its stored bytes (gguf_scalar_size(type) of them).
GgufValue decode_gguf_scalar(GgufValueType type, const uint8_t* bytes);

struct GgufTensor {
    std::string name;
    std::vector<int64_t> dims;  // GGUF order: dims[0] is the contiguous (row) length
    uint32_t type = 0;          // raw ggml type number
    uint64_t offset = 0;        // relative to the data section (GGUF)
    const uint8_t* data = nullptr;
    size_t nbytes = 0;

    int64_t elements() const;
    int64_t rows() const { return dims.empty() ? 0 : elements() / dims[0]; }
};

class ModelSource {
public:
    virtual ~ModelSource() = default;
    ModelSource(const ModelSource&) = delete;
    ModelSource& operator=(const ModelSource&) = delete;

    // The file or directory the model was loaded from.
    const std::string& path() const { return path_; }

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

    // Tells the source that tensor bytes [data, data + n) were copied
    // elsewhere and will not be read again, so a mapped file can drop them.
    virtual void release(const uint8_t* data, size_t n) const = 0;

    // The one file every tensor is read from, as it was when mapped (a
    // GGUF file); null when the tensors come from several files or from
    // memory (a Hugging Face directory). What the prepared-weights cache
    // is keyed by (model/prepared_cache.h).
    virtual const FileIdentity* file_identity() const { return nullptr; }

    // MODEL_LOAD error "cannot load <kind> '<path>': <why>".
    [[noreturn]] void fail(const std::string& why) const;

protected:
    // `kind` names the format in error messages ("GGUF file", ...).
    ModelSource(std::string path, std::string kind) : path_(std::move(path)), kind_(std::move(kind)) {}

    void add_tensor(GgufTensor tensor);

    std::map<std::string, GgufValue> metadata_;
    std::vector<GgufTensor> tensors_;

private:
    std::string path_;
    std::string kind_;
    std::map<std::string, size_t> tensor_index_;
};

}  // namespace vllm
