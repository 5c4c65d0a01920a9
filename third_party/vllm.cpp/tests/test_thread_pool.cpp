// ThreadPool: every chunk of every job runs exactly once and the job's
// writes are visible when for_each_chunk returns, for pools of 1 to 8
// threads (more threads than this machine's cores, so threads are put
// aside mid-job), over many short jobs as a decode step runs them; and
// parallel_for covers [0, n) with disjoint ranges, none shorter than its
// min_chunk; and park() between jobs (workers put to sleep, woken by the
// next job) loses no job.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "util/thread_pool.h"
#include "check.h"

using namespace vllm;

namespace {

void test_chunks_run_once(int threads) {
    ThreadPool pool(threads);
    std::mt19937 rng(threads);
    std::vector<int> runs;  // plain ints: for_each_chunk must publish the writes
    int bad_jobs = 0;
    for (int job = 0; job < 20000; ++job) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 40);
        runs.assign(static_cast<size_t>(n), 0);
        pool.for_each_chunk(n, [&](int64_t c) { ++runs[static_cast<size_t>(c)]; });
        for (int r : runs) bad_jobs += r != 1;
    }
    check(bad_jobs == 0, std::to_string(threads) + " threads: every chunk once in 20000 jobs");
}

void test_parallel_for(int threads) {
    ThreadPool pool(threads);
    int bad = 0;
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 31, 1000}) {
        std::vector<int> hits(static_cast<size_t>(n), 0);
        pool.parallel_for(n, [&](int64_t begin, int64_t end) {
            if (begin >= end) ++bad;  // never called with an empty range
            for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits) bad += h != 1;
    }
    check(bad == 0, std::to_string(threads) + " threads: parallel_for covers [0, n) once");
}

// min_chunk: no range is shorter than it unless [0, n) is, and work that
// makes one range runs on the calling thread alone.
void test_min_chunk(int threads) {
    ThreadPool pool(threads);
    int bad = 0;
    const std::thread::id caller = std::this_thread::get_id();
    for (int64_t n : {1, 100, 8191, 8192, 16384, 100000}) {
        std::vector<int> hits(static_cast<size_t>(n), 0);
        std::atomic<int> ranges{0}, off_caller{0}, short_ranges{0};
        pool.parallel_for(
            n,
            [&](int64_t begin, int64_t end) {
                ranges.fetch_add(1);
                if (std::this_thread::get_id() != caller) off_caller.fetch_add(1);
                if (end - begin < std::min<int64_t>(n, 8192)) short_ranges.fetch_add(1);
                for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
            },
            8192);
        for (int h : hits) bad += h != 1;
        bad += short_ranges.load();
        if (n < 16384 && (ranges.load() != 1 || off_caller.load() != 0)) ++bad;
    }
    check(bad == 0, std::to_string(threads) + " threads: parallel_for's min_chunk");
}

// A chunk that stalls (as a thread the OS put aside would) leaves the
// others to the remaining threads, the rest of its thread's share
// included; the job still completes with every chunk once, and the pool is
// reusable at once. Chunk 0 opens the caller's share, 8 a worker's.
void test_stalled_chunk(int64_t stalled) {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> runs(12);
    pool.for_each_chunk(12, [&](int64_t c) {
        if (c == stalled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        runs[static_cast<size_t>(c)].fetch_add(1);
    });
    int bad = 0;
    for (auto& r : runs) bad += r.load() != 1;
    check(bad == 0, "a stalled chunk " + std::to_string(stalled) + ": every chunk once");
    int64_t sum = 0;
    pool.parallel_for(100, [&](int64_t begin, int64_t end) {
        static std::mutex m;
        std::lock_guard<std::mutex> lock(m);
        for (int64_t i = begin; i < end; ++i) sum += i;
    });
    check(sum == 4950, "the pool is reusable after a stalled chunk");
}

// The engine parks the workers after each step's forward pass: every job
// after a park still runs every chunk once, whether the workers were
// asleep already (a pause after the park) or still spinning.
void test_park_between_jobs(int threads) {
    ThreadPool pool(threads);
    std::mt19937 rng(threads + 100);
    std::vector<int> runs;
    int bad_jobs = 0;
    for (int job = 0; job < 2000; ++job) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 40);
        runs.assign(static_cast<size_t>(n), 0);
        pool.for_each_chunk(n, [&](int64_t c) { ++runs[static_cast<size_t>(c)]; });
        for (int r : runs) bad_jobs += r != 1;
        if (job % 3 == 0) pool.park();
        if (job % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    check(bad_jobs == 0, std::to_string(threads) + " threads: every chunk once with park() between jobs");
}

}  // namespace

int main() {
    for (int threads : {1, 2, 3, 8}) {
        test_chunks_run_once(threads);
        test_parallel_for(threads);
        test_min_chunk(threads);
        test_park_between_jobs(threads);
    }
    test_stalled_chunk(0);
    test_stalled_chunk(8);
    return report();
}
