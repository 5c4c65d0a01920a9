#include "util/wake_fd.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#if defined(__linux__)
#include <sys/eventfd.h>
#endif

#include "util/error.h"

namespace vllm {

namespace {

[[noreturn]] void throw_system(const char* what) {
    throw_runtime(std::string("cannot make a pollable descriptor (") + what + "): " + std::strerror(errno));
}

}  // namespace

WakeFd::WakeFd() {
#if defined(__linux__)
    read_fd_ = write_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (read_fd_ < 0) throw_system("eventfd");
#else
    int fds[2];
    if (::pipe(fds) != 0) throw_system("pipe");
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    for (int fd : fds) {
        if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
            ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            const int saved = errno;
            ::close(fds[0]);
            ::close(fds[1]);
            errno = saved;
            throw_system("fcntl");
        }
    }
#endif
}

WakeFd::~WakeFd() {
    ::close(read_fd_);
    if (write_fd_ != read_fd_) ::close(write_fd_);
}

void WakeFd::set() {
    // An eventfd takes an 8-byte count; a pipe any byte. Neither can fail
    // here but for a full pipe (EAGAIN), which is readable already.
    const uint64_t one = 1;
    ssize_t written;
    do {
        written = ::write(write_fd_, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
}

void WakeFd::reset() {
    // An eventfd's read takes the whole count; a pipe is read until empty.
    uint64_t buffer[8];
    for (;;) {
        const ssize_t n = ::read(read_fd_, buffer, sizeof buffer);
        if (n > 0 && read_fd_ != write_fd_) continue;
        if (n < 0 && errno == EINTR) continue;
        return;
    }
}

}  // namespace vllm
