#include "util/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VLLM_CPU_RELAX() _mm_pause()
#else
#define VLLM_CPU_RELAX() std::this_thread::yield()
#endif

namespace vllm {

namespace {
// Spin iterations before a worker goes to sleep (roughly a millisecond).
constexpr int kSpinIterations = 1 << 16;
}  // namespace

int ThreadPool::default_thread_count() {
    if (const char* env = std::getenv("VLLM_CPP_NUM_THREADS")) {
        int n = std::atoi(env);
        if (n > 0) return n;
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : default_thread_count()) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_.store(true);
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        int spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && !stopping_.load() &&
               spins < kSpinIterations) {
            VLLM_CPU_RELAX();
            ++spins;
        }
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, [&] {
                return stopping_.load() || generation_.load(std::memory_order_acquire) != seen;
            });
        }
        if (stopping_.load()) return;
        seen = generation_.load(std::memory_order_acquire);
        (*job_)(index, n_threads_);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
    if (n_threads_ == 1) {
        fn(0, 1);
        return;
    }
    job_ = &fn;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    {
        // Taking the mutex orders this wake-up after a sleeper's predicate
        // check, so no wake-up is lost.
        std::lock_guard<std::mutex> lock(mutex_);
    }
    start_cv_.notify_all();
    fn(0, n_threads_);
    while (pending_.load(std::memory_order_acquire) != 0) VLLM_CPU_RELAX();
    job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int threads = static_cast<int>(std::min<int64_t>(n, n_threads_));
    if (threads == 1) {
        fn(0, n);
        return;
    }
    run([&](int index, int /*count*/) {
        if (index >= threads) return;
        int64_t begin = n * index / threads;
        int64_t end = n * (index + 1) / threads;
        if (begin < end) fn(begin, end);
    });
}

}  // namespace vllm
