#include "engine/kv_event_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace vllm {

namespace {

void append_event_json(std::string& out, const KvCacheEvent& e) {
    const bool stored = e.kind == KvCacheEvent::Kind::Stored;
    out += stored ? "{\"type\":\"stored\"" : "{\"type\":\"removed\"";
    out += ",\"group\":" + std::to_string(e.group) + ",\"hash\":" + std::to_string(e.hash);
    if (stored) {
        out += ",\"parent\":" + (e.parent_hash == 0 ? std::string("null") : std::to_string(e.parent_hash));
        out += ",\"tokens\":[";
        for (size_t i = 0; i < e.tokens.size(); ++i) {
            if (i > 0) out += ',';
            out += std::to_string(e.tokens[i]);
        }
        out += ']';
    }
    out += '}';
}

}  // namespace

void KvEventQueue::push(KvCacheEventSink&& events) {
    if (events.empty()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (pending_.empty() && events.size() <= kMaxPendingKvEvents) {
            pending_ = std::move(events);
        } else {
            const size_t room = kMaxPendingKvEvents - std::min(pending_.size(), kMaxPendingKvEvents);
            const size_t kept = std::min(room, events.size());
            for (size_t i = 0; i < kept; ++i) pending_.push_back(std::move(events[i]));
            dropped_ += events.size() - kept;
        }
    }
    ready_.notify_all();
}

std::string KvEventQueue::take_json(int timeout_ms) {
    KvCacheEventSink taken;
    uint64_t dropped = 0;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (timeout_ms > 0)
            ready_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return closed_ || !pending_.empty() || dropped_ > 0; });
        taken.swap(pending_);
        dropped = std::exchange(dropped_, 0);
    }
    std::string out = "{\"dropped\":" + std::to_string(dropped) + ",\"events\":[";
    for (size_t i = 0; i < taken.size(); ++i) {
        if (i > 0) out += ',';
        append_event_json(out, taken[i]);
    }
    return out + "]}";
}

void KvEventQueue::close() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
    }
    ready_.notify_all();
}

}  // namespace vllm
