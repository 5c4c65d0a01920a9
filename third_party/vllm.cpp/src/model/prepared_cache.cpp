// The prepared-weights cache's entries: found, checked and mapped, or
// written (prepared_cache.h).
#include "model/prepared_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "dtype/ggml_type.h"
#include "formats/model_source.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace vllm {

namespace {

constexpr char kMagic[8] = {'V', 'L', 'L', 'M', 'P', 'R', 'E', 'P'};
// Bumped whenever the entry format changes (the layouts themselves are
// checked by their fingerprint).
constexpr uint32_t kFormatVersion = 1;
// The copies start here, on a huge page, so the mapping can use huge pages.
constexpr size_t kDataOffset = size_t(2) << 20;
constexpr size_t kCopyAlignment = 64;  // what the kernels' loads assume
// Bytes of each copy hashed to catch an entry whose data is not what was written.
constexpr size_t kSampleBytes = 4096;
constexpr const char* kEntrySuffix = ".prepared";
constexpr const char* kTempMarker = ".tmp.";

struct Header {
    char magic[8];
    uint32_t version;
    uint32_t matrices;
    uint64_t file_bytes;
    uint64_t layout_fingerprint;
    FileIdentity source;
    uint64_t source_path_bytes;
    uint64_t samples_hash;
    uint64_t header_hash;  // of the header (this field 0), the table and the path
};

struct TableEntry {
    uint32_t type, layout, q8_0_bytes, reserved;
    int64_t rows, cols;
    uint64_t row_bytes, offset;  // offset from kDataOffset
};

bool operator==(const TableEntry& a, const TableEntry& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// FNV-1a, 64-bit: a fingerprint, not a defence against forgery (whoever can
// write the cache directory can write the model file).
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

std::string default_directory() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/vllm-cpp/prepared";
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/vllm-cpp/prepared";
    return "";
}

bool is_off(std::string v) {
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v.empty() || v == "0" || v == "off" || v == "false" || v == "no";
}

// The layout code's fingerprint for the forms `plan` uses: each form's
// copy of a fixed probe matrix (16 rows of pseudo-random bytes), hashed. A
// change to any interleaving changes it, so an entry written by another
// build of the layouts is never read as this one's.
uint64_t layout_fingerprint(const std::vector<PreparedMatrix>& plan) {
    uint64_t h = fnv1a(&kFormatVersion, sizeof kFormatVersion);
    std::vector<uint32_t> seen;
    for (const PreparedMatrix& p : plan) {
        const kernels::QuantMatrix& f = p.form;
        const uint32_t key = static_cast<uint32_t>(f.type) << 8 | static_cast<uint32_t>(f.layout) << 4 |
                             static_cast<uint32_t>(f.q8_0_bytes);
        bool known = false;
        for (uint32_t s : seen) known = known || s == key;
        if (known) continue;
        seen.push_back(key);
        kernels::QuantMatrix probe = p.source;
        probe.rows = 16;
        probe.cols = 256;  // a whole block of every type
        probe.row_bytes = ggml_row_bytes(probe.type, probe.cols);
        std::vector<uint8_t> rows(probe.rows * probe.row_bytes), copy(rows.size() + kCopyAlignment, 0);
        uint32_t x = 2463534242u;
        for (uint8_t& b : rows) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            b = static_cast<uint8_t>(x);
        }
        probe.data = rows.data();
        const auto address = reinterpret_cast<uintptr_t>(copy.data());
        uint8_t* out = copy.data() + (kCopyAlignment - address % kCopyAlignment) % kCopyAlignment;
        kernels::write_matmul_layout(probe, f, out);
        h = fnv1a(&key, sizeof key, h);
        h = fnv1a(out, rows.size(), h);
    }
    return h;
}

std::vector<TableEntry> table_of(const std::vector<PreparedMatrix>& plan, size_t& data_bytes) {
    std::vector<TableEntry> table;
    data_bytes = 0;
    for (const PreparedMatrix& p : plan) {
        TableEntry e{};
        e.type = static_cast<uint32_t>(p.form.type);
        e.layout = static_cast<uint32_t>(p.form.layout);
        e.q8_0_bytes = static_cast<uint32_t>(p.form.q8_0_bytes);
        e.rows = p.form.rows;
        e.cols = p.form.cols;
        e.row_bytes = p.form.row_bytes;
        e.offset = data_bytes;
        data_bytes = round_up(data_bytes + p.bytes(), kCopyAlignment);
        table.push_back(e);
    }
    return table;
}

uint64_t header_hash(Header h, const std::vector<TableEntry>& table, const std::string& path) {
    h.header_hash = 0;
    uint64_t x = fnv1a(&h, sizeof h);
    x = fnv1a(table.data(), table.size() * sizeof(TableEntry), x);
    return fnv1a(path.data(), path.size(), x);
}

uint64_t samples_hash(const uint8_t* data, const std::vector<TableEntry>& table) {
    uint64_t h = fnv1a("samples", 7);
    for (const TableEntry& e : table) {
        const size_t bytes = static_cast<size_t>(e.rows) * e.row_bytes;
        h = fnv1a(data + e.offset, bytes < kSampleBytes ? bytes : kSampleBytes, h);
    }
    return h;
}

// The file `fd` mapped read-only at a huge-page-aligned address, its pages
// faulted in now (the page cache's: the load pays for them here, as
// llama.cpp's does, and not the first step). Null on failure.
HugePageRegion map_entry(int fd, size_t bytes) {
    HugePageRegion region = reserve_huge_page_aligned(bytes);
    if (!region) return nullptr;
    int flags = MAP_SHARED | MAP_FIXED;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    if (::mmap(region.get(), bytes, PROT_READ, flags, fd, 0) == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
    ::madvise(region.get(), bytes, MADV_HUGEPAGE);  // advice only
#endif
    return region;
}

// pread or pwrite (`io`) until all n bytes are done, interrupted calls
// retried; false on an error or at the end of the file.
template <class Io, class Byte>
bool whole_transfer(Io io, int fd, Byte* p, size_t n, size_t offset) {
    while (n > 0) {
        const ssize_t done = io(fd, p, n, static_cast<off_t>(offset));
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return false;
        p += done, n -= static_cast<size_t>(done), offset += static_cast<size_t>(done);
    }
    return true;
}

bool read_all(int fd, void* out, size_t n, size_t offset) {
    return whole_transfer(::pread, fd, static_cast<uint8_t*>(out), n, offset);
}

bool write_all(int fd, const void* data, size_t n, size_t offset) {
    return whole_transfer(::pwrite, fd, static_cast<const uint8_t*>(data), n, offset);
}

bool make_directories(const std::string& dir) {
    for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
        const std::string part = dir.substr(0, slash);
        if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
        if (slash == std::string::npos) break;
    }
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// What one load expects of its entry: everything the header must say.
struct Expected {
    Header header{};
    std::vector<TableEntry> table;
    std::string source_path;
};

// The entry at `path` mapped, when it is whole and all of it agrees with
// `want`; null otherwise.
HugePageRegion open_entry(const std::string& path, const Expected& want) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return nullptr;
    HugePageRegion region;
    struct stat st {};
    Header h{};
    std::vector<TableEntry> table(want.table.size());
    std::string source(want.source_path.size(), '\0');
    const size_t table_bytes = table.size() * sizeof(TableEntry);
    const bool agrees =
        ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == want.header.file_bytes &&
        read_all(fd, &h, sizeof h, 0) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
        h.version == kFormatVersion && h.matrices == want.header.matrices && h.file_bytes == want.header.file_bytes &&
        h.layout_fingerprint == want.header.layout_fingerprint && h.source == want.header.source &&
        h.source_path_bytes == want.source_path.size() && read_all(fd, table.data(), table_bytes, sizeof h) &&
        table == want.table && read_all(fd, source.data(), source.size(), sizeof h + table_bytes) &&
        source == want.source_path && h.header_hash == header_hash(h, table, source);
    if (agrees) {
        region = map_entry(fd, want.header.file_bytes);
        if (region && samples_hash(region.get() + kDataOffset, table) != h.samples_hash) region.reset();
    }
    ::close(fd);
    return region;
}

// Deletes the entries in `dir` whose model file is gone or changed since
// they were written (their own model file's included: it is being written
// again), and temporary files of processes that no longer run.
void prune(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return;
    while (const dirent* ent = ::readdir(d)) {
        const std::string name = ent->d_name, path = dir + "/" + name;
        const size_t temp = name.find(kTempMarker);
        if (temp != std::string::npos) {
            const long pid = std::strtol(name.c_str() + temp + std::strlen(kTempMarker), nullptr, 10);
            if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::unlink(path.c_str());
            continue;
        }
        if (name.size() <= std::strlen(kEntrySuffix) ||
            name.compare(name.size() - std::strlen(kEntrySuffix), std::string::npos, kEntrySuffix) != 0)
            continue;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        Header h{};
        bool stale = !read_all(fd, &h, sizeof h, 0) || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0;
        if (!stale && h.source_path_bytes < PATH_MAX) {
            std::string source(h.source_path_bytes, '\0');
            const size_t at = sizeof h + size_t(h.matrices) * sizeof(TableEntry);
            FileIdentity now;
            const int src = read_all(fd, source.data(), source.size(), at)
                                ? ::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                                : -1;
            stale = src < 0 || !identity_of_descriptor(src, now) || now != h.source;
            if (src >= 0) ::close(src);
        }
        ::close(fd);
        if (stale) ::unlink(path.c_str());
    }
    ::closedir(d);
}

// The entry's file name: the model file's name (readable in a listing)
// and a hash of its full path and of the layouts, so each model file
// path and build layout has one entry, written again when the file changes.
std::string entry_name(const Expected& want) {
    std::string stem;
    const size_t slash = want.source_path.rfind('/');
    for (char c : want.source_path.substr(slash == std::string::npos ? 0 : slash + 1))
        stem += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    if (stem.size() > 80) stem.resize(80);
    uint64_t h = fnv1a(want.source_path.data(), want.source_path.size());
    h = fnv1a(&want.header.layout_fingerprint, sizeof want.header.layout_fingerprint, h);
    h = fnv1a(want.table.data(), want.table.size() * sizeof(TableEntry), h);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return stem + "-" + hex + kEntrySuffix;
}

// Room for `bytes` more in `dir` with 1 GiB and a twentieth of the disk to
// spare: the cache must not be what fills a disk.
bool has_room(const std::string& dir, size_t bytes) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) return false;
    const unsigned long long free_bytes = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
    const unsigned long long total = static_cast<unsigned long long>(fs.f_blocks) * fs.f_frsize;
    const unsigned long long spare = std::max<unsigned long long>(1ull << 30, total / 20);
    return free_bytes > bytes + spare;
}

// Writes the entry for `plan` as `path` (through a temporary name) and maps
// it; null on any failure, with nothing left behind.
HugePageRegion write_entry(const std::string& path, Expected& want,
                           const std::vector<PreparedMatrix>& plan, const ModelSource& file, ThreadPool& pool) {
    static std::atomic<unsigned> sequence{0};
    const std::string temp = path + kTempMarker + std::to_string(::getpid()) + "." + std::to_string(sequence++);
    const int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    // Each band goes through a zeroed buffer (write_matmul_layout ORs bits
    // in), reused: a fresh buffer per band would cost fresh pages again.
    std::mutex spare_mutex;
    std::vector<std::vector<uint8_t>> spare;
    std::atomic<bool> failed{false};
    for_each_band(plan, file, pool, [&](const PreparedBand& band) {
        if (failed.load(std::memory_order_relaxed)) return;
        std::vector<uint8_t> buffer;
        {
            std::lock_guard<std::mutex> lock(spare_mutex);
            if (!spare.empty()) buffer = std::move(spare.back()), spare.pop_back();
        }
        const size_t bytes = static_cast<size_t>(band.source.rows) * band.source.row_bytes;
        buffer.assign(bytes + kCopyAlignment, 0);
        const auto address = reinterpret_cast<uintptr_t>(buffer.data());
        uint8_t* out = buffer.data() + (kCopyAlignment - address % kCopyAlignment) % kCopyAlignment;
        kernels::write_matmul_layout(band.source, plan[band.matrix].form, out);
        if (!write_all(fd, out, bytes, kDataOffset + want.table[band.matrix].offset + band.offset))
            failed.store(true, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(spare_mutex);
        spare.push_back(std::move(buffer));
    });
    HugePageRegion region;
    // The last copy's tail padding: the file's length is the header's.
    if (!failed.load() && ::ftruncate(fd, static_cast<off_t>(want.header.file_bytes)) == 0)
        region = map_entry(fd, want.header.file_bytes);
    if (region) {
        want.header.samples_hash = samples_hash(region.get() + kDataOffset, want.table);
        want.header.header_hash = header_hash(want.header, want.table, want.source_path);
        const size_t table_bytes = want.table.size() * sizeof(TableEntry);
        // The header last: until it is written the entry is no valid one.
        if (!write_all(fd, want.source_path.data(), want.source_path.size(), sizeof(Header) + table_bytes) ||
            !write_all(fd, want.table.data(), table_bytes, sizeof(Header)) ||
            !write_all(fd, &want.header, sizeof want.header, 0) || ::rename(temp.c_str(), path.c_str()) != 0)
            region.reset();
    }
    ::close(fd);
    if (!region) ::unlink(temp.c_str());
    return region;
}

}  // namespace

PreparedCacheSettings PreparedCacheSettings::from_environment() {
    PreparedCacheSettings s;
    const char* dir = std::getenv("VLLM_CPP_PREPARED_CACHE");
    s.directory = dir == nullptr ? default_directory() : is_off(dir) ? "" : std::string(dir);
    s.enabled = !s.directory.empty();
    if (const char* mb = std::getenv("VLLM_CPP_PREPARED_CACHE_MIN_MB")) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(mb, &end, 10);
        if (end == mb || *end != '\0' || v < 0 || errno == ERANGE || v > (1ll << 40))
            throw_invalid_argument(std::string("VLLM_CPP_PREPARED_CACHE_MIN_MB must be a whole number of MiB >= 0, not '") +
                                   mb + "'");
        s.min_bytes = static_cast<size_t>(v) << 20;
    }
    return s;
}

bool prepare_through_cache(const std::vector<PreparedMatrix>& plan, HugePageArena& arena, const ModelSource& file,
                           ThreadPool& pool) {
    const PreparedCacheSettings settings = PreparedCacheSettings::from_environment();
    const FileIdentity* identity = file.file_identity();
    if (!settings.enabled || identity == nullptr || plan.empty()) return false;
    Expected want;
    size_t data_bytes = 0;
    want.table = table_of(plan, data_bytes);
    if (data_bytes < settings.min_bytes) return false;
    char* real = ::realpath(file.path().c_str(), nullptr);
    if (real == nullptr) return false;
    want.source_path = real;
    std::free(real);
    const size_t head_bytes = sizeof(Header) + want.table.size() * sizeof(TableEntry) + want.source_path.size();
    if (head_bytes > kDataOffset) return false;
    std::memcpy(want.header.magic, kMagic, sizeof kMagic);
    want.header.version = kFormatVersion;
    want.header.matrices = static_cast<uint32_t>(want.table.size());
    want.header.file_bytes = kDataOffset + data_bytes;
    want.header.layout_fingerprint = layout_fingerprint(plan);
    want.header.source = *identity;
    want.header.source_path_bytes = want.source_path.size();

    // A relative directory is taken from the working directory, as a shell would.
    const std::string dir = settings.directory;
    const std::string path = dir + "/" + entry_name(want);
    HugePageRegion region = open_entry(path, want);
    if (!region) {
        if (!make_directories(dir)) return false;
        prune(dir);
        if (!has_room(dir, want.header.file_bytes)) return false;
        region = write_entry(path, want, plan, file, pool);
        if (!region) return false;
    }
    for (size_t i = 0; i < plan.size(); ++i) {
        *plan[i].target = plan[i].form;
        plan[i].target->data = region.get() + kDataOffset + want.table[i].offset;
    }
    arena.keep(std::move(region));
    return true;
}

}  // namespace vllm
