// Pull-style delivery: the streams of many requests feed one ReadyQueue, and
// one consumer thread waits on the queue for whichever have something new,
// instead of one delivery thread per request (vLLM's AsyncLLM hands outputs
// to per-request queues the same way). The engine loop still only pushes
// into streams; a stream tells its PullEntry, which queues itself once until
// the consumer takes it. A consumer that runs an event loop waits on the
// queue's file descriptor (fd()) instead of blocking in wait(). Thread-safe.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/request_stream.h"
#include "util/wake_fd.h"

namespace vllm {

class ReadyQueue;

// One request as its ReadyQueue sees it: its stream and the consumer's tag.
class PullEntry : public StreamListener, public std::enable_shared_from_this<PullEntry> {
public:
    // coalesce: a take hands over every pending event at once (completions);
    // otherwise one event per take (chat chunks, each a JSON text).
    PullEntry(std::shared_ptr<ReadyQueue> queue, std::shared_ptr<RequestStream> stream, uint64_t tag, bool coalesce);

    // Starts listening to the stream (not in the constructor: it needs
    // shared_from_this).
    void attach();
    // Stops listening; a queued entry is skipped from now on.
    void detach();
    bool detached() const { return detached_.load(std::memory_order_acquire); }

    uint64_t tag() const { return tag_; }
    RequestStream& stream() { return *stream_; }
    bool take(RequestStream::Pending& out) { return stream_->take_pending(out, coalesce_); }

    void stream_ready() override;

private:
    friend class ReadyQueue;
    std::shared_ptr<ReadyQueue> queue_;
    std::shared_ptr<RequestStream> stream_;
    const uint64_t tag_;
    const bool coalesce_;
    std::atomic<bool> detached_{false};
    bool queued_ = false;  // guarded by the queue's mutex
};

class ReadyQueue {
public:
    // Queues the entry unless it is queued already.
    void push(std::shared_ptr<PullEntry> entry);
    // Waits up to timeout_ms (< 0: without limit) until an entry is ready or
    // wake() is called; returns at most max_entries ready entries, in the
    // order they became ready (empty: timed out or woken).
    std::vector<std::shared_ptr<PullEntry>> wait(int32_t timeout_ms, size_t max_entries);
    // Makes a wait() in progress (or the next one) return at once.
    void wake();

    // A descriptor that is readable whenever a wait() would return at once
    // (an entry is ready, or wake() was called since the last wait()), made
    // at the first call (throws vllm::Error RUNTIME when the system refuses
    // one); the same one after. Owned by the queue until close_fd().
    int fd();
    // Closes the descriptor (the poller's free: the caller's watch of it
    // ends there, while the queue lives on in the entries that hold it).
    void close_fd();

private:
    bool readable() const { return woken_ || !ready_.empty(); }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<PullEntry>> ready_;
    bool woken_ = false;
    // Made on demand: a queue that is only wait()ed on pays no system call.
    // A push that makes the queue ready sets it after releasing the mutex
    // (the consumer it wakes may poll at once, and would block on the
    // mutex while the engine thread is still inside write()); a wait()
    // that leaves nothing ready resets it under the mutex. So it is never
    // unreadable while an entry is ready, and may be readable with none for
    // a moment (a set landing after a wait() took its entry): that wait's
    // successor returns nothing and resets it. Shared: a set in flight
    // keeps it open past close_fd().
    std::shared_ptr<WakeFd> fd_;
};

}  // namespace vllm
