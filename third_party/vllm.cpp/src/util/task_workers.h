// A few threads that run queued tasks, first in first out: work taken off
// a thread that must not wait for it (the engine loop, a submitting
// caller), unlike ThreadPool's data-parallel regions. The threads run at a
// lower scheduling priority (Linux: nice +10), so on a busy machine they
// yield cores to the engine's forward pass rather than slow every stream.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vllm {

class TaskWorkers {
public:
    explicit TaskWorkers(int n_threads);
    // Drops the tasks not started yet (their captures are destroyed: a
    // promise among them breaks), lets the running ones finish, joins.
    ~TaskWorkers();
    TaskWorkers(const TaskWorkers&) = delete;
    TaskWorkers& operator=(const TaskWorkers&) = delete;

    // Queues `task`; a task must not throw (it reports its own outcome).
    void post(std::function<void()> task);

private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace vllm
