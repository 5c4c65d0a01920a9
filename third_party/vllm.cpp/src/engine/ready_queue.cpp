#include "engine/ready_queue.h"

#include <chrono>

namespace vllm {

PullSource::PullSource(std::shared_ptr<ReadyQueue> queue, uint64_t tag) : queue_(std::move(queue)), tag_(tag) {}

void PullSource::detach() { detached_.store(true, std::memory_order_release); }

void PullSource::announce() {
    if (!detached()) queue_->push(shared_from_this());
}

PullEntry::PullEntry(std::shared_ptr<ReadyQueue> queue, std::shared_ptr<RequestStream> stream, uint64_t tag,
                     bool coalesce)
    : PullSource(std::move(queue), tag), stream_(std::move(stream)), coalesce_(coalesce) {}

void PullEntry::attach() { stream_->set_listener(std::static_pointer_cast<PullEntry>(shared_from_this())); }

void PullEntry::detach() {
    PullSource::detach();
    stream_->set_listener(nullptr);  // breaks the stream -> entry -> stream cycle
}

void ReadyQueue::push(std::shared_ptr<PullSource> entry) {
    std::shared_ptr<WakeFd> announce;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (entry->queued_) return;
        entry->queued_ = true;
        ready_.push_back(std::move(entry));
        // One wake per batch: the consumer takes everything queued meanwhile.
        if (ready_.size() != 1) return;
        cv_.notify_one();
        announce = fd_;
    }
    if (announce) announce->set();
}

std::vector<std::shared_ptr<PullSource>> ReadyQueue::wait(int32_t timeout_ms, size_t max_entries) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto ready = [&] { return readable(); };
    if (timeout_ms < 0)
        cv_.wait(lock, ready);
    else if (timeout_ms > 0)
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    woken_ = false;
    std::vector<std::shared_ptr<PullSource>> taken;
    while (!ready_.empty() && taken.size() < max_entries) {
        ready_.front()->queued_ = false;
        taken.push_back(std::move(ready_.front()));
        ready_.pop_front();
    }
    if (fd_ && ready_.empty()) fd_->reset();
    return taken;
}

void ReadyQueue::wake() {
    std::shared_ptr<WakeFd> announce;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        woken_ = true;
        cv_.notify_all();
        announce = fd_;
    }
    if (announce) announce->set();
}

int ReadyQueue::fd() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fd_) {
        fd_ = std::make_shared<WakeFd>();
        if (readable()) fd_->set();
    }
    return fd_->fd();
}

void ReadyQueue::close_fd() {
    std::lock_guard<std::mutex> lock(mutex_);
    fd_.reset();
}

}  // namespace vllm
