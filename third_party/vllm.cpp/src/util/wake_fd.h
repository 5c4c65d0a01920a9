// A file descriptor that one thread makes readable and another resets, so
// that an event loop (epoll, kqueue, asyncio's add_reader) can wait for a
// condition of ours next to its sockets instead of keeping a thread blocked
// on a condition variable for it. An eventfd on Linux, a pipe elsewhere;
// both ends non-blocking and close-on-exec. Not thread-safe by itself: the
// owner serialises set() and reset() (ReadyQueue does, under its mutex).
#pragma once

namespace vllm {

class WakeFd {
public:
    // Throws vllm::Error (RUNTIME, with the system's reason) when the
    // system refuses a descriptor (e.g. the process's limit is reached).
    WakeFd();
    ~WakeFd();
    WakeFd(const WakeFd&) = delete;
    WakeFd& operator=(const WakeFd&) = delete;

    // The descriptor to wait on for readability.
    int fd() const { return read_fd_; }
    // Makes it readable (a no-op when it is).
    void set();
    // Makes it unreadable again.
    void reset();

private:
    int read_fd_ = -1;
    int write_fd_ = -1;  // == read_fd_ for an eventfd
};

}  // namespace vllm
