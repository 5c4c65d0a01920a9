// KV cache events on their way out of the engine (vllm_engine_kv_events_take):
// the loop thread appends each step's events; one consumer thread (the
// Python publisher) waits for them and takes all that are pending as one
// JSON batch. Bounded: a consumer that stops taking costs at most
// kMaxPendingKvEvents events of memory; what is dropped past it is counted
// and reported with the next batch, so the consumer knows its view of the
// cache is incomplete (it cannot be rebuilt from later events).
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/kv_cache_events.h"

namespace vllm {

// A step of a long prompt stores one event per block; this is a few
// hundred thousand blocks (tens of MB with their tokens).
constexpr size_t kMaxPendingKvEvents = 262144;

class KvEventQueue {
public:
    // Appends `events` (the loop's, after a step), dropping those past the bound.
    void push(KvCacheEventSink&& events);
    // Waits up to timeout_ms (0: not at all) for events or close(), then
    // takes every pending event as
    //   {"dropped": N, "events": [{"type": "stored", "group": g, "hash": h,
    //    "parent": p or null, "tokens": [...]}, {"type": "removed", "group": g,
    //    "hash": h}, ...]}
    // (hashes: the prefix cache's unsigned 64-bit chain hashes; N: events
    // lost to the bound since the last take).
    std::string take_json(int timeout_ms);
    // Wakes a waiting take (the engine is going away).
    void close();

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    KvCacheEventSink pending_;
    uint64_t dropped_ = 0;
    bool closed_ = false;
};

}  // namespace vllm
