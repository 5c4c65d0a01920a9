// Request delivery behind vllm.h. The engine has one way out: the pull
// primitive (engine/request_stream.h, engine/ready_queue.h: a request's
// events taken by their consumer, many requests' announced on one ready
// queue). Every entry point that starts a request is a consumer of it:
// - pull requests (vllm_*_submit_pull): the caller's poller takes their
//   events, no thread of their own; a chat call is a stage over its choices'
//   streams (chat/chat_call.h), rendered into chunks as the poller takes them;
// - callback requests (vllm_request_submit*, vllm_chat_submit): v10's
//   library-owned delivery thread per request takes the events and runs the
//   callback (so a callback may block or re-enter the library without
//   stalling the engine); no callback starts after a cancel;
// - blocking calls (vllm_complete_stream, vllm_chat_stream, vllm_complete,
//   vllm_chat): the calling thread takes them.
// Requests and pollers hold a reference on their engine.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/handles.h"
#include "chat/chat_call.h"
#include "chat/completion_call.h"
#include "chat/messages_call.h"
#include "engine/request_stream.h"
#include "vllm.h"

// A request of either kind: one engine request (a completion: its stream)
// or one OpenAI call, chat or completions (its choices' stage,
// chat/choice_call.h), plus how it is delivered: a
// callback run by the delivery thread, or a poller's entry (`pull`).
struct vllm_request {
    explicit vllm_request(vllm_engine* owner) : engine(owner) {}
    vllm::api::EngineReference engine;  // first: the engine outlives everything below
    std::shared_ptr<vllm::RequestStream> stream;  // an engine request; null for an OpenAI call
    std::shared_ptr<vllm::chat::ChoiceCall> call;  // an OpenAI call; null for an engine request
    std::shared_ptr<vllm::PullSource> pull;       // pull requests only
    bool logprobs = false;  // a completion submitted with logprobs >= 0
    vllm_token_callback cb = nullptr;
    void* user_data = nullptr;
    std::thread delivery;
    std::thread::id delivery_id;  // set before the thread runs user code

    std::mutex mutex;
    std::condition_variable delivered_cv;
    bool delivered = false;          // delivery is done with the request (its outcome is set)
    bool free_from_callback = false; // vllm_request_free ran on the delivery thread
    vllm_request_state state = VLLM_REQUEST_RUNNING;  // how it ended, once delivered
    const char* finish_reason = nullptr;  // a completion's, once delivered
    vllm_status status = VLLM_OK;    // terminal status, once delivered
    std::string error;               // its message ("" for OK)
};

namespace vllm::api {

// How a callback's delivery ended.
struct DeliveryEnd {
    bool stop_returned = false;  // the callback returned false (on the terminal call too)
    bool terminal = false;       // the terminal call was made
};

// The callback loop over one completion's events (a blocking stream's caller
// or a delivery thread): hands each event that carries text, then the
// terminal one, to cb until the stream ends (terminal event, or a cancel),
// cb returns false (before the terminal event that cancels the request), or
// leave() says so after a call. Returns once the engine has let go of the
// request (it may still run its logits processor), so its result is final.
DeliveryEnd deliver_events(RequestStream& stream, vllm_token_callback cb, void* user_data,
                           const std::function<bool()>& leave);

// The requests' starts: each hands back a new request (the caller owns it).
vllm_request* start_callback_completion(vllm_engine* engine, std::shared_ptr<RequestStream> stream, bool logprobs,
                                        vllm_token_callback cb, void* user_data);
vllm_request* start_callback_chat(vllm_engine* engine, std::shared_ptr<const chat::ChatService::Prepared> prepared,
                                  vllm_token_callback cb, void* user_data);
vllm_request* start_pull_completion(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                    std::shared_ptr<RequestStream> stream, bool logprobs);
vllm_request* start_pull_chat(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                              std::shared_ptr<const chat::ChatService::Prepared> prepared);
vllm_request* start_pull_openai_completion(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                           std::shared_ptr<const chat::CompletionService::Prepared> prepared);
// An Anthropic Messages call (vllm_messages_submit_pull).
vllm_request* start_pull_messages(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                  std::shared_ptr<const chat::MessagesPrepared> prepared);

// Up to max_events events of the poller's ready requests, waiting up to
// timeout_ms (< 0: without limit); their strings live in the poller until
// its next poll. Returns the count.
int32_t poll_events(vllm_poller* poller, int32_t timeout_ms, vllm_event* events, int32_t max_events);

void cancel_request(vllm_request* request);
// Waits until the request's delivery has finished (a pull request: until
// the engine is done with it), at most timeout_ms (< 0: without limit);
// whether it has.
bool wait_delivered(vllm_request* request, int32_t timeout_ms);
// Settles a pull request whose engine side is done (no-op otherwise).
void settle_pull(const vllm_request* request);
bool on_delivery_thread(const vllm_request* request);
// vllm_request_free: cancels, waits for delivery (from its own callback: the
// delivery thread finishes the free once the callback returns), frees.
void free_request(vllm_request* request);

// The completion request's stream; INVALID_ARGUMENT for a chat request
// (whose callback received the whole response).
const RequestStream& completion_stream(const vllm_request* request);
// Throws unless delivery has finished without an error.
void require_delivered(const vllm_request* request);

}  // namespace vllm::api
