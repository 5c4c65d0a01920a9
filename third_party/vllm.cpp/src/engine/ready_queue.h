// Pull-style delivery, the engine's one way out: the streams of many
// requests (or stages over them) feed one ReadyQueue, and
// one consumer thread waits on the queue for whichever have something new,
// instead of one delivery thread per request (vLLM's AsyncLLM hands outputs
// to per-request queues the same way). The engine loop still only pushes
// into streams; a stream tells its source, which queues itself once until
// the consumer takes it. Every other delivery (callbacks, blocking calls)
// is a consumer of this (api/delivery.h). A consumer that runs an event loop waits on the
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

// One thing a ReadyQueue's consumer takes events from, under the tag the
// consumer gave it: one request's stream (PullEntry), or a stage over
// several streams (chat::ChoiceCall: an OpenAI call's choices rendered as chunks).
// A source announces itself when it has something new; the consumer takes
// its events on its own thread.
class PullSource : public std::enable_shared_from_this<PullSource> {
public:
    PullSource(std::shared_ptr<ReadyQueue> queue, uint64_t tag);
    virtual ~PullSource() = default;
    PullSource(const PullSource&) = delete;
    PullSource& operator=(const PullSource&) = delete;

    uint64_t tag() const { return tag_; }
    // The consumer's next event; false when there is nothing new. Only the
    // queue's consumer calls it, on its thread.
    virtual bool take(RequestStream::Pending& out) = 0;
    // Stops announcing; a queued source is skipped from now on.
    virtual void detach();
    bool detached() const { return detached_.load(std::memory_order_acquire); }

protected:
    // Queues this source (once until the consumer takes it), unless detached.
    void announce();
    ReadyQueue& queue() { return *queue_; }

private:
    friend class ReadyQueue;
    std::shared_ptr<ReadyQueue> queue_;
    const uint64_t tag_;
    std::atomic<bool> detached_{false};
    bool queued_ = false;  // guarded by the queue's mutex
};

// One request's stream as its ReadyQueue sees it.
class PullEntry : public PullSource, public StreamListener {
public:
    // coalesce: a take hands over every pending event at once (completions);
    // otherwise one event per take.
    PullEntry(std::shared_ptr<ReadyQueue> queue, std::shared_ptr<RequestStream> stream, uint64_t tag, bool coalesce);

    // Starts listening to the stream (not in the constructor: it needs
    // shared_from_this).
    void attach();
    // Stops listening; a queued entry is skipped from now on.
    void detach() override;

    RequestStream& stream() { return *stream_; }
    bool take(RequestStream::Pending& out) override { return stream_->take_pending(out, coalesce_); }

    void stream_ready() override { announce(); }

private:
    std::shared_ptr<RequestStream> stream_;
    const bool coalesce_;
};

class ReadyQueue {
public:
    // Queues the source unless it is queued already.
    void push(std::shared_ptr<PullSource> source);
    // Waits up to timeout_ms (< 0: without limit) until an entry is ready or
    // wake() is called; returns at most max_entries ready entries, in the
    // order they became ready (empty: timed out or woken).
    std::vector<std::shared_ptr<PullSource>> wait(int32_t timeout_ms, size_t max_entries);
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
    std::deque<std::shared_ptr<PullSource>> ready_;
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
