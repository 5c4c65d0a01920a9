// RecursionGuard: a depth count per walk and a check of the stack left on
// the thread the walk runs on. The thread's stack bounds are read once per
// thread (pthread_getattr_np; on the main thread glibc derives them from
// RLIMIT_STACK, which is clamped here too), then every step costs a
// comparison of its frame address.
#include "util/recursion_budget.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <string>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "util/error.h"

namespace vllm {

namespace {

struct StackBounds {
    uintptr_t low = 0;   // lowest usable address (stacks grow down)
    uintptr_t high = 0;  // one past the highest
    size_t reserve = 0;  // what a guard keeps free: a quarter of the stack, 32 to 64 KiB
};

StackBounds read_stack_bounds() {
    StackBounds b;
#if defined(__APPLE__)
    const pthread_t self = pthread_self();
    b.high = reinterpret_cast<uintptr_t>(pthread_get_stackaddr_np(self));
    b.low = b.high - pthread_get_stacksize_np(self);
#elif defined(__linux__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
    void* addr = nullptr;
    size_t size = 0;
    const int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || addr == nullptr || size == 0) return b;
    b.low = reinterpret_cast<uintptr_t>(addr);
    b.high = b.low + size;
    // The main thread's stack grows on demand up to RLIMIT_STACK: never
    // trust more than that limit (glibc already bounds it so; other libcs
    // may report the whole gap below the next mapping).
    if (static_cast<pid_t>(syscall(SYS_gettid)) == getpid()) {
        rlimit limit{};
        if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < size)
            b.low = b.high - limit.rlim_cur;
    }
#endif
    b.reserve = std::clamp<size_t>((b.high - b.low) / 4, 32 * 1024, 64 * 1024);
    return b;
}

const StackBounds& thread_stack_bounds() {
    thread_local const StackBounds bounds = read_stack_bounds();
    return bounds;
}

uintptr_t frame_address() { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)); }

}  // namespace

size_t recursion_stack_reserve() { return thread_stack_bounds().reserve; }

bool stack_runs_short() {
    const StackBounds& b = thread_stack_bounds();
    const uintptr_t here = frame_address();
    return here > b.low && here < b.high && here - b.low < b.reserve;
}

size_t remaining_stack() {
    const StackBounds& b = thread_stack_bounds();
    const uintptr_t here = frame_address();
    if (b.high == 0 || here <= b.low || here >= b.high) return SIZE_MAX;
    return here - b.low;
}

std::string RecursionGuard::refusal(const RecursionLimit& limit, int depth) {
    std::string message = std::string(limit.walk) + " is nested too deeply (limit " + std::to_string(limit.max_depth) +
                          " levels";
    if (depth <= limit.max_depth) {  // the stack ran short first
        const StackBounds& b = thread_stack_bounds();
        message += ", fewer on this thread: its " + std::to_string((b.high - b.low) / 1024) + " KiB stack allows " +
                   std::to_string(depth - 1);
    }
    return message + ")";
}

}  // namespace vllm
