// The opaque handles of vllm.h that the entry points and the delivery room
// share: an engine (with its chat service, built at the first chat call) and
// a poller, each holding references that keep the engine alive.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/chat_service.h"
#include "chat/completion_service.h"
#include "engine/engine.h"
#include "engine/ready_queue.h"

struct vllm_engine {
    std::unique_ptr<vllm::Engine> engine;
    vllm::chat::ChatParserNames chat_parsers;
    // Built at the first chat call (where the spec refuses unknown parser
    // names and broken templates); a failed build is retried by the next.
    std::mutex chat_mutex;
    std::unique_ptr<vllm::chat::ChatService> chat;
    std::unique_ptr<vllm::chat::CompletionService> completions;  // built at the first completions call
    // The caller's handle plus one per live request and poller: the engine
    // is torn down when the last of them lets go (vllm_engine_free may come
    // first; see "Request lifecycle" in vllm.h).
    std::atomic<int> references{1};
};

namespace vllm::api {

// One reference on an engine, let go of when destroyed: the first member of
// whatever holds it, so it is destroyed last.
class EngineReference {
public:
    explicit EngineReference(vllm_engine* engine) : engine_(engine) {
        engine_->references.fetch_add(1, std::memory_order_relaxed);
    }
    EngineReference(const EngineReference&) = delete;
    EngineReference& operator=(const EngineReference&) = delete;
    ~EngineReference() { release(engine_); }

    vllm_engine* get() const { return engine_; }

    // Lets go of one reference; the last one tears the engine down.
    static void release(vllm_engine* engine) {
        if (engine->references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete engine;
    }

private:
    vllm_engine* engine_;
};

// The engine's chat service, built at the first call (INVALID_ARGUMENT for
// unknown parser names or a template that does not parse).
const chat::ChatService& chat_service(vllm_engine* handle);
// The engine's /v1/completions service, built at the first call.
const chat::CompletionService& completion_service(vllm_engine* handle);

}  // namespace vllm::api

// A ReadyQueue and the strings of the last poll's events.
struct vllm_poller {
    explicit vllm_poller(vllm_engine* owner) : engine(owner) {}
    vllm::api::EngineReference engine;
    std::shared_ptr<vllm::ReadyQueue> queue = std::make_shared<vllm::ReadyQueue>();
    std::vector<std::string> texts;
    std::vector<std::string> logprobs;
};
