#include "formats/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "util/error.h"
#include "util/json.h"

namespace vllm {

namespace {

// The reference implementation's limit: a bigger header is corrupt, and
// refusing it keeps a lying length from making us parse the whole file.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
constexpr size_t kLengthBytes = 8;

// The dtypes computed as stored; any other is refused by name.
bool ggml_type_of(const std::string& dtype, GgmlType& type) {
    if (dtype == "F32") type = GgmlType::F32;
    else if (dtype == "F16") type = GgmlType::F16;
    else if (dtype == "BF16") type = GgmlType::BF16;
    else return false;
    return true;
}

}  // namespace

void SafetensorsFile::fail(const std::string& why) const {
    throw_model_load("cannot load safetensors file '" + path_ + "': " + why);
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : path_(path), map_(path, [this](const std::string& why) { fail(why); }) {
    const uint8_t* base = map_.data();
    const size_t size = map_.size();
    if (size < kLengthBytes) fail("file is truncated (" + std::to_string(size) + " bytes, no header length)");
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, base, kLengthBytes);  // little-endian, as every host we build for
    if (header_bytes > kMaxHeaderBytes) fail("header length " + std::to_string(header_bytes) + " is implausible (corrupt file)");
    if (header_bytes > size - kLengthBytes)
        fail("file is truncated (the header needs " + std::to_string(header_bytes) + " bytes, the file has " +
             std::to_string(size - kLengthBytes) + " after the length)");
    json::Value header;
    try {
        header = json::parse(std::string_view(reinterpret_cast<const char*>(base + kLengthBytes), header_bytes));
    } catch (const Error& e) {
        fail(std::string("the header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) fail("the header is not a JSON object");

    const uint8_t* data = base + kLengthBytes + header_bytes;
    const size_t data_bytes = size - kLengthBytes - header_bytes;
    for (const json::Value::Member& member : header.members()) {
        const std::string& name = member.first;
        const json::Value& info = member.second;
        if (name == "__metadata__") {
            if (!info.is_object()) fail("__metadata__ is not an object");
            for (const json::Value::Member& m : info.members()) {
                if (!m.second.is_string()) fail("__metadata__ '" + m.first + "' is not a string");
                metadata_[m.first] = m.second.as_string();
            }
            continue;
        }
        const auto bad = [&](const std::string& why) { fail("tensor '" + name + "' " + why); };
        if (!info.is_object()) bad("is not described by an object");
        const json::Value* dtype = info.find("dtype");
        const json::Value* shape = info.find("shape");
        const json::Value* offsets = info.find("data_offsets");
        if (dtype == nullptr || !dtype->is_string()) bad("has no dtype string");
        if (shape == nullptr || !shape->is_array()) bad("has no shape array");
        if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 || !offsets->items()[0].is_int() ||
            !offsets->items()[1].is_int())
            bad("has no data_offsets [begin, end]");
        SafetensorsTensor t;
        t.name = name;
        if (!ggml_type_of(dtype->as_string(), t.type))
            bad("has dtype " + dtype->as_string() + ", which this engine does not compute (supported: F32, F16, BF16)");
        // Bounded dims keep the element count from overflowing.
        uint64_t elements = 1;
        for (const json::Value& d : shape->items()) {
            if (!d.is_int() || d.as_int() <= 0 || d.as_int() > (int64_t(1) << 40)) bad("has a bad dimension in its shape");
            t.shape.push_back(d.as_int());
            elements *= static_cast<uint64_t>(d.as_int());
            if (elements > (uint64_t(1) << 40)) bad("has too many elements");
        }
        const int64_t begin = offsets->items()[0].as_int(), end = offsets->items()[1].as_int();
        if (begin < 0 || end < begin) bad("has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] out of order");
        if (static_cast<uint64_t>(end) > data_bytes)
            bad("data runs past the end of the file (ends at " + std::to_string(end) + ", the data section has " +
                std::to_string(data_bytes) + " bytes; the file is truncated or the header lies)");
        const size_t element_bytes = ggml_type_info(static_cast<uint32_t>(t.type))->block_bytes;
        t.nbytes = static_cast<size_t>(end - begin);
        if (elements * element_bytes != t.nbytes)
            bad("has shape and dtype for " + std::to_string(elements * element_bytes) + " bytes but data_offsets span " +
                std::to_string(t.nbytes));
        t.data = data + begin;
        if (reinterpret_cast<uintptr_t>(t.data) % element_bytes != 0) bad("data is not aligned to its element size");
        tensors_.push_back(std::move(t));
    }
    // Each byte belongs to at most one tensor.
    std::vector<const SafetensorsTensor*> by_offset;
    for (const SafetensorsTensor& t : tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->data < b->data; });
    for (size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i]->data < by_offset[i - 1]->data + by_offset[i - 1]->nbytes)
            fail("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap in the data section");
}

}  // namespace vllm
