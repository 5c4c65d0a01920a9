#include "formats/gguf_reader.h"

#include <cstring>

namespace vllm {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t kDefaultAlignment = 32;
// Sanity bounds so a corrupt count cannot make us allocate the machine away.
constexpr uint64_t kMaxDims = 4;
constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;

// A bounds-checked cursor over the mapped bytes.
class Cursor {
public:
    Cursor(const uint8_t* data, size_t size, const GgufFile& file) : data_(data), size_(size), file_(file) {}

    size_t pos() const { return pos_; }

    template <typename T>
    T read() {
        need(sizeof(T), "value");
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string() {
        std::string s;
        append_string(s);
        return s;
    }

    // Reads a string onto the end of `out`.
    void append_string(std::string& out) {
        uint64_t n = read<uint64_t>();
        if (n > kMaxStringBytes) file_.fail("string length " + std::to_string(n) + " at offset " + std::to_string(pos_) + " is implausible");
        out.append(reinterpret_cast<const char*>(take(n, "string")), n);
    }

    // The next n bytes, which the cursor moves past.
    const uint8_t* take(uint64_t n, const char* what) {
        need(n, what);
        const uint8_t* bytes = data_ + pos_;
        pos_ += n;
        return bytes;
    }

    void need(uint64_t n, const char* what) {
        if (n > size_ || pos_ > size_ - n)
            file_.fail(std::string("file is truncated (reading a ") + what + " at offset " + std::to_string(pos_) + ")");
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    const GgufFile& file_;
};

GgufValue read_value(Cursor& c, GgufValueType type, const GgufFile& file, int depth) {
    if (const size_t size = gguf_scalar_size(type)) return decode_gguf_scalar(type, c.take(size, "value"));
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufValueType::STRING: v.s = c.read_string(); break;
        case GgufValueType::ARRAY: {
            if (depth > 2) file.fail("metadata arrays nested too deeply");
            uint32_t et = c.read<uint32_t>();
            if (et > static_cast<uint32_t>(GgufValueType::FLOAT64))
                file.fail("unknown metadata array element type " + std::to_string(et));
            v.element_type = static_cast<GgufValueType>(et);
            uint64_t n = c.read<uint64_t>();
            // Each element takes at least one byte: a count beyond the file is corrupt.
            c.need(n, "array");
            if (const size_t size = gguf_scalar_size(v.element_type)) {
                const uint8_t* bytes = c.take(n * size, "array");
                v.packed_scalars.assign(bytes, bytes + n * size);
            } else if (v.element_type == GgufValueType::STRING) {
                v.string_ends.reserve(n);
                for (uint64_t k = 0; k < n; ++k) {
                    c.append_string(v.packed_strings);
                    v.string_ends.push_back(v.packed_strings.size());
                }
                v.packed_strings.shrink_to_fit();
            } else {
                v.nested.reserve(n);
                for (uint64_t k = 0; k < n; ++k) v.nested.push_back(read_value(c, v.element_type, file, depth + 1));
            }
            break;
        }
        default:
            file.fail("unknown metadata value type " + std::to_string(static_cast<uint32_t>(type)));
    }
    return v;
}

}  // namespace

GgufFile::GgufFile(const std::string& path)
    : ModelSource(path, "GGUF file"), map_(path, [this](const std::string& why) { fail(why); }) {
    if (map_.size() < 24) fail("file is too small to be GGUF (" + std::to_string(map_.size()) + " bytes)");
    const uint8_t* base = map_.data();
    const size_t size = map_.size();
    Cursor c(base, size, *this);
    if (c.read<uint32_t>() != kGgufMagic) fail("not a GGUF file (bad magic)");
    version_ = c.read<uint32_t>();
    if (version_ != 2 && version_ != 3)
        fail("unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
    uint64_t n_tensors = c.read<uint64_t>();
    uint64_t n_kv = c.read<uint64_t>();
    // Each kv and tensor info takes well over 8 bytes.
    if (n_tensors > size / 8 || n_kv > size / 8) fail("tensor or metadata count is implausible (corrupt header)");
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key = c.read_string();
        uint32_t t = c.read<uint32_t>();
        if (t > static_cast<uint32_t>(GgufValueType::FLOAT64))
            fail("metadata '" + key + "' has unknown value type " + std::to_string(t));
        metadata_[key] = read_value(c, static_cast<GgufValueType>(t), *this, 0);
    }
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensor t;
        t.name = c.read_string();
        uint32_t n_dims = c.read<uint32_t>();
        if (n_dims == 0 || n_dims > kMaxDims) fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions");
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t dim = c.read<uint64_t>();
            if (dim == 0 || dim > (uint64_t(1) << 40)) fail("tensor '" + t.name + "' has a bad dimension");
            // Bounded, so element and byte counts cannot overflow.
            if (elements > (uint64_t(1) << 48) / dim) fail("tensor '" + t.name + "' has too many elements");
            elements *= dim;
            t.dims.push_back(static_cast<int64_t>(dim));
        }
        t.type = c.read<uint32_t>();
        t.offset = c.read<uint64_t>();
        add_tensor(std::move(t));
    }
    uint64_t alignment = static_cast<uint64_t>(get_int("general.alignment", kDefaultAlignment));
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) fail("general.alignment is not a power of two");
    uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
    for (GgufTensor& t : tensors_) {
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (info == nullptr) fail("tensor '" + t.name + "' has unknown type " + std::to_string(t.type));
        if (t.dims[0] % info->block_elements != 0)
            fail("tensor '" + t.name + "' row length is not a multiple of its block size");
        t.nbytes = static_cast<size_t>(t.elements() / info->block_elements) * info->block_bytes;
        if (t.offset % alignment != 0) fail("tensor '" + t.name + "' data is not aligned");
        if (t.offset > size) fail("file is truncated (tensor '" + t.name + "' data starts past the end)");
        uint64_t begin = data_start + t.offset;
        if (begin > size || t.nbytes > size - begin)
            fail("file is truncated (tensor '" + t.name + "' data runs past the end)");
        t.data = base + begin;
    }
}

}  // namespace vllm
