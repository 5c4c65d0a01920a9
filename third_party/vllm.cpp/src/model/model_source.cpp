#include "model/model_source.h"

#include "util/error.h"

namespace vllm {

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
        case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
        case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::BOOL:
            return true;
        default:
            return false;
    }
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
    out.reserve(v->array.size());
    for (const GgufValue& e : v->array) out.push_back(e.s);
    return out;
}

std::vector<int64_t> ModelSource::get_int_array(const std::string& key) const {
    std::vector<int64_t> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY) fail("metadata '" + key + "' is not an array");
    for (const GgufValue& e : v->array) {
        if (!e.is_integer()) fail("metadata '" + key + "' is not an array of integers");
        out.push_back(e.i);
    }
    return out;
}

std::vector<double> ModelSource::get_float_array(const std::string& key) const {
    std::vector<double> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY) fail("metadata '" + key + "' is not an array");
    for (const GgufValue& e : v->array) {
        if (!e.is_float() && !e.is_integer()) fail("metadata '" + key + "' is not an array of numbers");
        out.push_back(e.is_float() ? e.f : static_cast<double>(e.i));
    }
    return out;
}

const GgufTensor* ModelSource::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace vllm
