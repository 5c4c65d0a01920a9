#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vllm {

MappedFile::MappedFile(const std::string& path, const std::function<void(const std::string&)>& fail) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(std::strerror(errno));
    struct stat st {};
    std::string why;
    if (::fstat(fd, &st) != 0)
        why = std::strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory";
    else if (!S_ISREG(st.st_mode))
        why = "is not a regular file";
    if (!why.empty()) {
        ::close(fd);
        fail(why);
    }
    size_ = static_cast<size_t>(st.st_size);
    identity_of_descriptor(fd, identity_);
    if (size_ == 0) {
        ::close(fd);
        fail("file is empty");
    }
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (map_ == MAP_FAILED) {
        map_ = nullptr;
        fail(std::string("mmap failed: ") + std::strerror(map_errno));
    }
}

bool identity_of_descriptor(int fd, FileIdentity& out) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return false;
    out.device = static_cast<uint64_t>(st.st_dev);
    out.inode = static_cast<uint64_t>(st.st_ino);
    out.size = static_cast<uint64_t>(st.st_size);
#if defined(__APPLE__)
    out.modified_ns = int64_t(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
    out.changed_ns = int64_t(st.st_ctimespec.tv_sec) * 1000000000 + st.st_ctimespec.tv_nsec;
#else
    out.modified_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    out.changed_ns = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
#endif
    return true;
}

MappedFile::~MappedFile() {
    if (map_ != nullptr) ::munmap(map_, size_);
}

void MappedFile::release(const uint8_t* data, size_t n) const {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + n) / page * page;
    // Advice only: a failure leaves the pages resident, nothing worse. Linux
    // drops a private file mapping's pages at once; macOS may only take the
    // hint; a system without the advice keeps them.
#if defined(MADV_DONTNEED)
    if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
    (void)begin;
    (void)end;
#endif
}

}  // namespace vllm
