#include "util/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

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
// Spinning threads yield every this many iterations: with more runnable
// threads than cores (other processes, Python threads, big pools), the
// thread a spinner waits for may be waiting for the spinner's core.
constexpr unsigned kYieldEvery = 1 << 8;
// The next-chunk field of a finished job's state: no chunk is left to take.
constexpr uint64_t kClosed = 0xffffffff;

// One iteration of a spin-wait.
inline void spin_pause(unsigned iteration) {
    if (iteration % kYieldEvery == kYieldEvery - 1) std::this_thread::yield();
    else VLLM_CPU_RELAX();
}
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
    : n_threads_(n_threads > 0 ? n_threads : default_thread_count()), shares_(n_threads_) {
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
    const auto generation = [this] { return generation_.load(std::memory_order_acquire); };
    for (;;) {
        int spins = 0;
        while (generation() == seen && !stopping_.load() && spins < kSpinIterations &&
               !parked_.load(std::memory_order_relaxed))
            spin_pause(spins++);
        if (generation() == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, [&] { return stopping_.load() || generation() != seen; });
        }
        if (stopping_.load()) return;
        seen = generation();
        take_chunks(seen, index);
    }
}

bool ThreadPool::take_chunk(Share& share, uint64_t generation, int64_t* chunk) {
    for (;;) {
        uint64_t state = share.state.load(std::memory_order_acquire);
        if (state >> 32 != generation) return false;
        *chunk = static_cast<int64_t>(state & 0xffffffffu);
        // `end` may already be the next job's if this one just closed; the
        // compare-exchange then fails on the changed state.
        if (*chunk >= share.end.load(std::memory_order_relaxed)) return false;
        if (share.state.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel)) return true;
    }
}

void ThreadPool::take_chunks(uint64_t generation, int own) {
    // Chunks run here are counted done once, on the way out: the job cannot
    // end (and job_fn_ change) before they are.
    int64_t done = 0, chunk = 0;
    for (int i = 0; i < n_threads_; ++i) {
        Share& share = shares_[(own + i) % n_threads_];
        while (take_chunk(share, generation, &chunk)) {
            (*job_fn_)(chunk);
            ++done;
        }
    }
    if (done > 0) chunks_done_.fetch_add(done, std::memory_order_acq_rel);
}

void ThreadPool::for_each_chunk(int64_t n_chunks, const std::function<void(int64_t)>& fn) {
    if (n_chunks <= 0) return;
    if (n_threads_ == 1 || n_chunks == 1) {
        for (int64_t i = 0; i < n_chunks; ++i) fn(i);
        return;
    }
    if (n_chunks >= kClosed) throw std::length_error("ThreadPool: too many chunks");
    job_fn_ = &fn;
    chunks_done_.store(0, std::memory_order_relaxed);
    parked_.store(false, std::memory_order_relaxed);
    const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
    for (int t = 0; t < n_threads_; ++t) {
        shares_[t].end.store(n_chunks * (t + 1) / n_threads_, std::memory_order_relaxed);
        shares_[t].state.store(generation << 32 | static_cast<uint64_t>(n_chunks * t / n_threads_),
                               std::memory_order_release);
    }
    generation_.store(generation, std::memory_order_release);
    {
        // Taking the mutex orders this wake-up after a sleeper's predicate
        // check, so no wake-up is lost.
        std::lock_guard<std::mutex> lock(mutex_);
    }
    start_cv_.notify_all();
    take_chunks(generation, 0);
    // Chunks still running on other threads finish within microseconds
    // unless their thread was put aside (then the yields let it run).
    for (unsigned spins = 0; chunks_done_.load(std::memory_order_acquire) != n_chunks; ++spins) spin_pause(spins);
    // Close the job before the next one changes the shares' ends: a thread
    // that read a share's state just before its last chunk went could
    // otherwise pair that stale state with the next job's larger end, and
    // its compare-exchange would still succeed.
    for (Share& share : shares_) share.state.store(generation << 32 | kClosed, std::memory_order_release);
    job_fn_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
    if (n <= 0) return;
    const int64_t chunks = std::clamp<int64_t>(n / std::max<int64_t>(1, min_chunk), 1, kChunksPerThread * n_threads_);
    for_each_chunk(chunks, [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); });
}

}  // namespace vllm
