// A fixed pool of worker threads for data-parallel kernels. One pool per
// engine; the calling thread takes part in the work, so a pool of N threads
// keeps N cores busy. Size: hardware concurrency, or VLLM_CPP_NUM_THREADS.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vllm {

class ThreadPool {
public:
    // n_threads <= 0: default_thread_count().
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs fn(thread_index, n_threads) on every thread (the caller is index
    // 0) and returns when all have finished. Not reentrant: one parallel
    // region at a time per pool (callers serialise on the engine's step).
    void run(const std::function<void(int, int)>& fn);

    // Splits [0, n) into contiguous chunks, one per thread, and calls
    // fn(begin, end) for each non-empty chunk.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

    // VLLM_CPP_NUM_THREADS when set to a positive integer, else the number
    // of hardware threads.
    static int default_thread_count();

private:
    void worker_loop(int index);

    int n_threads_;
    std::vector<std::thread> workers_;
    // Workers spin briefly on generation_ before sleeping on start_cv_: a
    // decode step runs hundreds of short parallel regions, and a futex wake
    // per region would cost more than the work itself.
    std::mutex mutex_;
    std::condition_variable start_cv_;
    const std::function<void(int, int)>* job_ = nullptr;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stopping_{false};
};

}  // namespace vllm
