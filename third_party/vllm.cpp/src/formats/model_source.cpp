#include "formats/model_source.h"

#include <cstring>

#include "util/error.h"

namespace vllm {

bool gguf_is_integer(GgufValueType type) {
    switch (type) {
        case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
        case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
        case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::BOOL:
            return true;
        default:
            return false;
    }
}

bool gguf_is_float(GgufValueType type) { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }

size_t gguf_scalar_size(GgufValueType type) {
    switch (type) {
        case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
        case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
        default: return 0;
    }
}

namespace {
template <typename T>
T load(const uint8_t* bytes) {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
}
}  // namespace

GgufValue decode_gguf_scalar(GgufValueType type, const uint8_t* bytes) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufValueType::UINT8: v.u = load<uint8_t>(bytes); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT8: v.i = load<int8_t>(bytes); break;
        case GgufValueType::UINT16: v.u = load<uint16_t>(bytes); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT16: v.i = load<int16_t>(bytes); break;
        case GgufValueType::UINT32: v.u = load<uint32_t>(bytes); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT32: v.i = load<int32_t>(bytes); break;
        case GgufValueType::UINT64: v.u = load<uint64_t>(bytes); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT64: v.i = load<int64_t>(bytes); break;
        case GgufValueType::FLOAT32: v.f = load<float>(bytes); break;
        case GgufValueType::FLOAT64: v.f = load<double>(bytes); break;
        case GgufValueType::BOOL: v.i = load<uint8_t>(bytes) != 0; break;
        default: break;  // not a scalar: the caller checked gguf_scalar_size
    }
    return v;
}

size_t GgufValue::array_size() const {
    if (element_type == GgufValueType::STRING) return string_ends.size();
    if (element_type == GgufValueType::ARRAY) return nested.size();
    return packed_scalars.size() / gguf_scalar_size(element_type);
}

GgufValue GgufValue::element(size_t k) const {
    if (element_type != GgufValueType::STRING) {
        return decode_gguf_scalar(element_type, packed_scalars.data() + k * gguf_scalar_size(element_type));
    }
    GgufValue v;
    v.type = GgufValueType::STRING;
    const uint64_t begin = k == 0 ? 0 : string_ends[k - 1];
    v.s = packed_strings.substr(begin, string_ends[k] - begin);
    return v;
}

int64_t GgufTensor::elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

namespace {

// Control bytes as \xNN: names read from a corrupt file can hold a NUL,
// which would cut the C string of the error before its reason.
std::string printable(const std::string& text) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace

void ModelSource::fail(const std::string& why) const {
    throw_model_load(printable("cannot load " + kind_ + " '" + path_ + "': " + why));
}

void ModelSource::add_tensor(GgufTensor tensor) {
    tensor_index_[tensor.name] = tensors_.size();
    tensors_.push_back(std::move(tensor));
}

const GgufValue* ModelSource::find(const std::string& key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

std::string ModelSource::get_string(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->type != GgufValueType::STRING) fail("metadata '" + key + "' is not a string");
    return v->s;
}

int64_t ModelSource::get_int(const std::string& key, int64_t fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_integer()) fail("metadata '" + key + "' is not an integer");
    return v->i;
}

double ModelSource::get_float(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->is_float()) return v->f;
    if (v->is_integer()) return static_cast<double>(v->i);
    fail("metadata '" + key + "' is not a number");
}

bool ModelSource::get_bool(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_integer()) fail("metadata '" + key + "' is not a boolean");
    return v->i != 0;
}

std::string ModelSource::require_string(const std::string& key) const {
    if (find(key) == nullptr) fail("required metadata '" + key + "' is missing");
    return get_string(key, "");
}

int64_t ModelSource::require_int(const std::string& key) const {
    if (find(key) == nullptr) fail("required metadata '" + key + "' is missing");
    return get_int(key, 0);
}

std::vector<std::string> ModelSource::get_string_array(const std::string& key) const {
    std::vector<std::string> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY || v->element_type != GgufValueType::STRING)
        fail("metadata '" + key + "' is not an array of strings");
    out.reserve(v->array_size());
    for (size_t k = 0; k < v->array_size(); ++k) out.push_back(std::move(v->element(k).s));
    return out;
}

std::vector<int64_t> ModelSource::get_int_array(const std::string& key) const {
    std::vector<int64_t> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY) fail("metadata '" + key + "' is not an array");
    // An empty array of another type reads as empty, as it always has.
    if (v->array_size() > 0 && !gguf_is_integer(v->element_type))
        fail("metadata '" + key + "' is not an array of integers");
    out.reserve(v->array_size());
    for (size_t k = 0; k < v->array_size(); ++k) out.push_back(v->element(k).i);
    return out;
}

std::vector<double> ModelSource::get_float_array(const std::string& key) const {
    std::vector<double> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY) fail("metadata '" + key + "' is not an array");
    if (v->array_size() > 0 && !gguf_is_float(v->element_type) && !gguf_is_integer(v->element_type))
        fail("metadata '" + key + "' is not an array of numbers");
    out.reserve(v->array_size());
    for (size_t k = 0; k < v->array_size(); ++k) {
        const GgufValue e = v->element(k);
        out.push_back(e.is_float() ? e.f : static_cast<double>(e.i));
    }
    return out;
}

const GgufTensor* ModelSource::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace vllm
