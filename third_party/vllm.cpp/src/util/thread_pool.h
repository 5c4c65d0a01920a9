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

    // Calls fn(i) once for every i in [0, n_chunks) and returns when all
    // calls have finished. The chunks are dealt out as one contiguous share
    // per thread (the caller's first); each thread takes its own share's
    // chunks in order, then the chunks nobody has taken yet of the others'
    // shares, so a thread the OS has put aside (more runnable threads than
    // cores) holds nobody up: the others take its share. Not reentrant: one
    // call at a time per pool (callers serialise on the engine's step).
    void for_each_chunk(int64_t n_chunks, const std::function<void(int64_t)>& fn);

    // Splits [0, n) into contiguous ranges (a few per thread, each at least
    // min_chunk long) and calls fn(begin, end) for each, through
    // for_each_chunk. Work that makes a single range runs on the caller
    // alone: waking the workers and waiting for them costs a few
    // microseconds, more than a decode step's small element-wise work.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

    // Sends spinning workers to sleep now instead of after their spin: the
    // caller has serial work ahead (the engine: sampling, then handing
    // output to streams) whose wake-ups (a stream's consumer thread, an
    // event loop) should find a core idle rather than take one from a
    // worker mid-region of the next step. The next job wakes them.
    void park() { parked_.store(true, std::memory_order_relaxed); }

    // VLLM_CPP_NUM_THREADS when set to a positive integer, else the number
    // of hardware threads.
    static int default_thread_count();

private:
    // parallel_for's ranges per thread: enough for the others to take over
    // the share of a thread the OS has put aside, few enough that each range
    // is still real work.
    static constexpr int64_t kChunksPerThread = 4;

    // One thread's share of a job's chunks, on a cache line of its own: a
    // thread taking its own chunks touches no line another thread writes
    // (one shared next-chunk word cost a cache-line transfer per chunk
    // between the cores, a few per parallel region).
    struct alignas(64) Share {
        // Generation in the high 32 bits, the next untaken chunk in the low
        // 32 (kClosed once the job is over), in one word so that taking a
        // chunk (compare-exchange) fails once the job is over.
        std::atomic<uint64_t> state{0};
        std::atomic<int64_t> end{0};  // one past the share's last chunk
    };

    void worker_loop(int index);
    // Runs chunks of job `generation` until none is left to take: share
    // `own` first, then the others'.
    void take_chunks(uint64_t generation, int own);
    // Takes the next untaken chunk of `share` in job `generation`; false
    // when the share has none left (or the job is over).
    static bool take_chunk(Share& share, uint64_t generation, int64_t* chunk);

    int n_threads_;
    std::vector<std::thread> workers_;
    // Workers spin briefly on the job generation before sleeping on
    // start_cv_: a decode step runs hundreds of short parallel regions, and
    // a futex wake per region would cost more than the work itself.
    std::mutex mutex_;
    std::condition_variable start_cv_;
    std::atomic<uint64_t> generation_{0};  // of the latest job
    std::vector<Share> shares_;            // one per thread; index 0 the caller's
    const std::function<void(int64_t)>* job_fn_ = nullptr;  // valid while a chunk of the job is taken
    std::atomic<int64_t> chunks_done_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> parked_{false};  // park() until the next job
};

}  // namespace vllm
