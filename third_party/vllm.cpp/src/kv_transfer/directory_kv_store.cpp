#include "kv_transfer/directory_kv_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

namespace vllm::kv_transfer {

namespace {

std::string errno_text(const std::string& what, const std::string& path) {
    return what + " '" + path + "': " + std::strerror(errno);
}

// mkdir -p; false with why on failure.
bool make_directories(const std::string& path, std::string& why) {
    for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
        const std::string prefix = path.substr(0, slash);
        if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
            why = errno_text("cannot create the directory", prefix);
            return false;
        }
        if (slash == std::string::npos) break;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        why = "'" + path + "' is not a directory";
        return false;
    }
    return true;
}

bool write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

}  // namespace

std::string DirectoryKvStore::path_of(const StoreKey& key) const {
    return root_ + "/" + key.model + "/" + key.block_hex() + ".kvblock";
}

StoreResult DirectoryKvStore::get(const StoreKey& key, size_t max_bytes, std::string& record, std::string& why) {
    const std::string path = path_of(key);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return StoreResult::Miss;
        why = errno_text("cannot open", path);
        return StoreResult::Unavailable;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        why = "'" + path + "' is not a regular file";
        return StoreResult::Unavailable;
    }
    record.resize(std::min<size_t>(static_cast<size_t>(st.st_size), max_bytes));
    size_t got = 0;
    while (got < record.size()) {
        const ssize_t r = ::read(fd, &record[got], record.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<size_t>(r);
    }
    ::close(fd);
    record.resize(got);  // shorter than stat said: the check calls it truncated
    return StoreResult::Hit;
}

StoreResult DirectoryKvStore::exists(const StoreKey& key, std::string& why) {
    const std::string path = path_of(key);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return StoreResult::Hit;
    if (errno == ENOENT || errno == ENOTDIR) return StoreResult::Miss;
    why = errno_text("cannot look at", path);
    return StoreResult::Unavailable;
}

bool DirectoryKvStore::put(const StoreKey& key, const std::string& record, std::string& why) {
    const std::string dir = root_ + "/" + key.model;
    if (!make_directories(dir, why)) return false;
    const std::string final_path = path_of(key);
    // Unique among processes (pid), threads (id) and calls (counter).
    const std::string temp_path = dir + "/." + key.block_hex() + ".tmp." + std::to_string(::getpid()) + "." +
                                  std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
                                  std::to_string(temp_counter_++);
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        why = errno_text("cannot create", temp_path);
        return false;
    }
    // A full disk shows here ("No space left on device"), at write or at close.
    bool ok = write_all(fd, record.data(), record.size());
    if (!ok) why = errno_text("cannot write", temp_path);
    if (::close(fd) != 0 && ok) {
        ok = false;
        why = errno_text("cannot write", temp_path);
    }
    if (!ok) {
        ::unlink(temp_path.c_str());
        return false;
    }
    // Atomic replace: a concurrent writer of the same key wrote the same bytes.
    if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
        why = errno_text("cannot rename into", final_path);
        ::unlink(temp_path.c_str());
        return false;
    }
    return true;
}

}  // namespace vllm::kv_transfer
