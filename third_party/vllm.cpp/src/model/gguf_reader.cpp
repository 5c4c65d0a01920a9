#include "model/gguf_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

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
    Cursor(const uint8_t* data, size_t size, const GgufFile& file, void (*fail)(const GgufFile&, const std::string&))
        : data_(data), size_(size), file_(file), fail_(fail) {}

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
        uint64_t n = read<uint64_t>();
        if (n > kMaxStringBytes) fail_(file_, "string length " + std::to_string(n) + " at offset " + std::to_string(pos_) + " is implausible");
        need(n, "string");
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

    void need(uint64_t n, const char* what) {
        if (n > size_ || pos_ > size_ - n)
            fail_(file_, std::string("file is truncated (reading a ") + what + " at offset " + std::to_string(pos_) + ")");
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    const GgufFile& file_;
    void (*fail_)(const GgufFile&, const std::string&);
};

[[noreturn]] void fail_for(const GgufFile& file, const std::string& why) {
    throw_model_load("cannot load GGUF file '" + file.path() + "': " + why);
}

GgufValue read_value(Cursor& c, GgufValueType type, const GgufFile& file, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufValueType::UINT8: v.u = c.read<uint8_t>(); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT8: v.i = c.read<int8_t>(); break;
        case GgufValueType::UINT16: v.u = c.read<uint16_t>(); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT16: v.i = c.read<int16_t>(); break;
        case GgufValueType::UINT32: v.u = c.read<uint32_t>(); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT32: v.i = c.read<int32_t>(); break;
        case GgufValueType::UINT64: v.u = c.read<uint64_t>(); v.i = static_cast<int64_t>(v.u); break;
        case GgufValueType::INT64: v.i = c.read<int64_t>(); break;
        case GgufValueType::FLOAT32: v.f = c.read<float>(); break;
        case GgufValueType::FLOAT64: v.f = c.read<double>(); break;
        case GgufValueType::BOOL: v.i = c.read<uint8_t>() != 0; break;
        case GgufValueType::STRING: v.s = c.read_string(); break;
        case GgufValueType::ARRAY: {
            if (depth > 2) fail_for(file, "metadata arrays nested too deeply");
            uint32_t et = c.read<uint32_t>();
            if (et > static_cast<uint32_t>(GgufValueType::FLOAT64))
                fail_for(file, "unknown metadata array element type " + std::to_string(et));
            v.element_type = static_cast<GgufValueType>(et);
            uint64_t n = c.read<uint64_t>();
            // Each element takes at least one byte: a count beyond the file is corrupt.
            c.need(n, "array");
            v.array.reserve(n);
            for (uint64_t k = 0; k < n; ++k) v.array.push_back(read_value(c, v.element_type, file, depth + 1));
            break;
        }
        default:
            fail_for(file, "unknown metadata value type " + std::to_string(static_cast<uint32_t>(type)));
    }
    return v;
}

}  // namespace

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

void GgufFile::fail(const std::string& why) const { fail_for(*this, why); }

GgufFile::GgufFile(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        fail(std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        fail("is a directory");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ < 24) {
        ::close(fd);
        fail("file is too small to be GGUF (" + std::to_string(size_) + " bytes)");
    }
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map_ == MAP_FAILED) {
        map_ = nullptr;
        fail(std::string("mmap failed: ") + std::strerror(errno));
    }
    try {
        const uint8_t* base = static_cast<const uint8_t*>(map_);
        Cursor c(base, size_, *this, fail_for);
        if (c.read<uint32_t>() != kGgufMagic) fail("not a GGUF file (bad magic)");
        version_ = c.read<uint32_t>();
        if (version_ != 2 && version_ != 3)
            fail("unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
        uint64_t n_tensors = c.read<uint64_t>();
        uint64_t n_kv = c.read<uint64_t>();
        // Each kv and tensor info takes well over 8 bytes.
        if (n_tensors > size_ / 8 || n_kv > size_ / 8) fail("tensor or metadata count is implausible (corrupt header)");
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
            for (uint32_t d = 0; d < n_dims; ++d) {
                uint64_t dim = c.read<uint64_t>();
                if (dim == 0 || dim > (uint64_t(1) << 40)) fail("tensor '" + t.name + "' has a bad dimension");
                t.dims.push_back(static_cast<int64_t>(dim));
            }
            t.type = c.read<uint32_t>();
            t.offset = c.read<uint64_t>();
            tensor_index_[t.name] = tensors_.size();
            tensors_.push_back(std::move(t));
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
            uint64_t begin = data_start + t.offset;
            if (begin > size_ || t.nbytes > size_ - begin)
                fail("file is truncated (tensor '" + t.name + "' data runs past the end)");
            t.data = base + begin;
        }
    } catch (...) {
        ::munmap(map_, size_);
        map_ = nullptr;
        throw;
    }
}

GgufFile::~GgufFile() {
    if (map_ != nullptr) ::munmap(map_, size_);
}

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->type != GgufValueType::STRING) fail("metadata '" + key + "' is not a string");
    return v->s;
}

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_integer()) fail("metadata '" + key + "' is not an integer");
    return v->i;
}

double GgufFile::get_float(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->is_float()) return v->f;
    if (v->is_integer()) return static_cast<double>(v->i);
    fail("metadata '" + key + "' is not a number");
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_integer()) fail("metadata '" + key + "' is not a boolean");
    return v->i != 0;
}

std::string GgufFile::require_string(const std::string& key) const {
    if (find(key) == nullptr) fail("required metadata '" + key + "' is missing");
    return get_string(key, "");
}

int64_t GgufFile::require_int(const std::string& key) const {
    if (find(key) == nullptr) fail("required metadata '" + key + "' is missing");
    return get_int(key, 0);
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
    std::vector<std::string> out;
    const GgufValue* v = find(key);
    if (v == nullptr) return out;
    if (v->type != GgufValueType::ARRAY || v->element_type != GgufValueType::STRING)
        fail("metadata '" + key + "' is not an array of strings");
    out.reserve(v->array.size());
    for (const GgufValue& e : v->array) out.push_back(e.s);
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
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

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
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

void GgufFile::release(const uint8_t* data, size_t n) const {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + n) / page * page;
    // Advice only: a failure leaves the pages resident, nothing worse.
    if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace vllm
