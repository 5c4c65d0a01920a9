// What the libFuzzer targets share. A parser refusing bad input throws
// vllm::Error, which a target catches; anything else escaping it (another
// exception, a crash, a sanitizer report, a hang) is a bug libFuzzer
// reports.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "util/error.h"

namespace fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; a refusal (vllm::Error) is an expected outcome.
template <class F>
void refusals_allowed(F&& parse) {
    try {
        parse();
    } catch (const vllm::Error&) {
    }
}

// The input as a regular file, for the loaders that take a path: an
// anonymous memory file, named through /proc/self/fd.
class MemoryFile {
public:
    MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz-input", MFD_CLOEXEC)) {
        if (fd_ < 0) {
            std::perror("memfd_create");
            std::abort();
        }
        for (size_t done = 0; done < size;) {
            const ssize_t n = write(fd_, data + done, size - done);
            if (n <= 0) std::abort();
            done += static_cast<size_t>(n);
        }
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    ~MemoryFile() { close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    const std::string& path() const { return path_; }

private:
    int fd_;
    std::string path_;
};

}  // namespace fuzz
