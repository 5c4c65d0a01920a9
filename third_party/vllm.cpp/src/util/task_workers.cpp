// TaskWorkers: the queue and its threads.
#include "util/task_workers.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace vllm {

namespace {
// Linux gives each thread its own nice value; elsewhere the threads keep
// the process's priority.
void lower_own_priority() {
#if defined(__linux__)
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
}
}  // namespace

TaskWorkers::TaskWorkers(int n_threads) {
    for (int i = 0; i < n_threads; ++i) threads_.emplace_back([this] { run(); });
}

TaskWorkers::~TaskWorkers() {
    std::deque<std::function<void()>> dropped;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        dropped.swap(tasks_);
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    // `dropped` goes here, outside the lock: a broken promise wakes its waiter.
}

void TaskWorkers::post(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void TaskWorkers::run() {
    lower_own_priority();
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
            if (stopping_) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
    }
}

}  // namespace vllm
