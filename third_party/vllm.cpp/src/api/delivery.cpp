#include "api/delivery.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "api/output_json.h"
#include "util/error.h"

namespace vllm::api {

DeliveryEnd deliver_events(RequestStream& stream, vllm_token_callback cb, void* user_data,
                           const std::function<bool()>& leave) {
    DeliveryEnd end;
    RequestStream::Event event;
    while (stream.next(event)) {
        if (!event.finished && event.delta.empty()) continue;  // a step with no text
        end.terminal = event.finished;
        if (!cb(event.delta.c_str(), event.finished, user_data)) {
            end.stop_returned = true;
            stream.cancel();  // no effect once the terminal event was taken
            break;
        }
        if (leave()) break;
    }
    stream.wait_engine_done();
    return end;
}

namespace {

// How a request whose delivery ended with `end` and `status` ended.
vllm_request_state state_of(const DeliveryEnd& end, vllm_status status) {
    if (status != VLLM_OK) return VLLM_REQUEST_FAILED;
    if (end.stop_returned) return VLLM_REQUEST_STOPPED;
    return end.terminal ? VLLM_REQUEST_FINISHED : VLLM_REQUEST_CANCELLED;
}

// Publishes how the request ended (with its mutex held); finish_reason is
// its stream's (null for an OpenAI call).
void settle_locked(vllm_request* request, const DeliveryEnd& end, vllm_status status, const std::string& error,
                   const char* finish_reason) {
    request->state = state_of(end, status);
    request->status = status;
    request->error = error;
    request->finish_reason = finish_reason;
    request->delivered = true;
}

// The end of every delivery thread: publishes the outcome, wakes the
// waiters, and frees the request when vllm_request_free was called from its
// own callback.
void finish_delivery(vllm_request* request, const DeliveryEnd& end, vllm_status status, const std::string& error,
                     const char* finish_reason = nullptr) {
    bool self_free;
    {
        std::lock_guard<std::mutex> lock(request->mutex);
        settle_locked(request, end, status, error, finish_reason);
        self_free = request->free_from_callback;
    }
    request->delivered_cv.notify_all();
    if (self_free) {
        // It cannot join itself: detach, then free.
        request->delivery.detach();
        delete request;
    }
}

// The delivery thread of a completion: the event loop, left when
// vllm_request_free ran in the callback; then the outcome.
void deliver(vllm_request* request) {
    const DeliveryEnd end = deliver_events(*request->stream, request->cb, request->user_data,
                                           [request] { return request->free_from_callback; });
    const RequestStream::Result r = request->stream->result();
    // An engine failure counts when its terminal event was taken (false on
    // it is a natural finish); a cancelled or stopped request ends OK.
    if (!request->stream->cancel_requested() && r.status != VLLM_OK)
        finish_delivery(request, end, r.status, r.error, r.finish_reason);
    else
        finish_delivery(request, end, VLLM_OK, "", r.finish_reason);
}

// The delivery thread of a chat call: drains the call (its own ready queue),
// each chunk (or the one chat.completion JSON as a single terminal call) to
// the callback, and publishes its status. A callback returning false, or a
// cancel (a free from the callback cancels too), stops every choice.
void deliver_chat(vllm_request* request) {
    chat::ChoiceCall& call = *request->call;
    DeliveryEnd end;
    call.deliver([&](const std::string& text, bool finished) {
        end.terminal = finished;
        if (request->cb(text.c_str(), finished, request->user_data)) return true;
        end.stop_returned = true;  // false on the terminal call is a natural finish
        return false;
    });
    call.detach();
    const chat::ChoiceCall::Outcome outcome = call.outcome();
    // A failed call still ended with the terminal callback (its text ""),
    // so a caller waiting for it is always woken.
    if (call.cancelled())
        finish_delivery(request, end, VLLM_OK, "");
    else
        finish_delivery(request, end, outcome.status, outcome.error);
}

// Starts `body(request)` on the request's delivery thread and hands the
// request to the caller.
vllm_request* start_delivery(std::unique_ptr<vllm_request> request, void (*body)(vllm_request*)) {
    vllm_request* raw = request.get();
    {
        // delivery_id must be set before the thread can call back.
        std::lock_guard<std::mutex> lock(raw->mutex);
        raw->delivery = std::thread([raw, body] {
            { std::lock_guard<std::mutex> wait_for_id(raw->mutex); }
            body(raw);
        });
        raw->delivery_id = raw->delivery.get_id();
    }
    return request.release();
}

bool is_pull_completion(const vllm_request* request) { return request->pull && request->stream; }
bool is_pull_call(const vllm_request* request) { return request->pull && request->call; }

}  // namespace

vllm_request* start_callback_completion(vllm_engine* engine, std::shared_ptr<RequestStream> stream, bool logprobs,
                                        vllm_token_callback cb, void* user_data) {
    auto request = std::make_unique<vllm_request>(engine);
    request->logprobs = logprobs;
    request->cb = cb;
    request->user_data = user_data;
    request->stream = std::move(stream);
    return start_delivery(std::move(request), deliver);
}

vllm_request* start_callback_chat(vllm_engine* engine, std::shared_ptr<const chat::ChatService::Prepared> prepared,
                                  vllm_token_callback cb, void* user_data) {
    auto request = std::make_unique<vllm_request>(engine);
    request->cb = cb;
    request->user_data = user_data;
    // Its own queue: the delivery thread is its one consumer.
    request->call = chat_service(engine).start(std::move(prepared), std::make_shared<ReadyQueue>(), 0);
    return start_delivery(std::move(request), deliver_chat);
}

vllm_request* start_pull_completion(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                    std::shared_ptr<RequestStream> stream, bool logprobs) {
    auto request = std::make_unique<vllm_request>(engine);
    request->stream = std::move(stream);
    request->logprobs = logprobs;
    auto entry = std::make_shared<PullEntry>(poller->queue, request->stream, tag, /*coalesce=*/true);
    entry->attach();
    request->pull = std::move(entry);
    return request.release();
}

namespace {

vllm_request* start_pull_call(vllm_engine* engine, std::shared_ptr<chat::ChoiceCall> call) {
    auto request = std::make_unique<vllm_request>(engine);
    request->call = std::move(call);
    request->pull = request->call;
    return request.release();
}

}  // namespace

vllm_request* start_pull_chat(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                              std::shared_ptr<const chat::ChatService::Prepared> prepared) {
    return start_pull_call(engine, chat_service(engine).start(std::move(prepared), poller->queue, tag));
}

vllm_request* start_pull_openai_completion(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                           std::shared_ptr<const chat::CompletionService::Prepared> prepared) {
    return start_pull_call(engine, completion_service(engine).start(std::move(prepared), poller->queue, tag));
}

vllm_request* start_pull_messages(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                  std::shared_ptr<const chat::MessagesPrepared> prepared) {
    return start_pull_call(
        engine, chat::MessagesCall::start(chat_service(engine), std::move(prepared), poller->queue, tag));
}

int32_t poll_events(vllm_poller* poller, int32_t timeout_ms, vllm_event* events, int32_t max_events) {
    const std::vector<std::shared_ptr<PullSource>> ready =
        poller->queue->wait(timeout_ms, static_cast<size_t>(max_events));
    // Reserved, so the strings never move while events point into them.
    poller->texts.clear();
    poller->texts.reserve(ready.size());
    poller->logprobs.clear();
    poller->logprobs.reserve(ready.size());
    const Tokenizer& tokenizer = poller->engine.get()->engine->tokenizer();
    int32_t n = 0;
    RequestStream::Pending pending;
    for (const std::shared_ptr<PullSource>& source : ready) {
        if (source->detached() || !source->take(pending)) continue;
        vllm_event& event = events[n++];
        event.tag = source->tag();
        poller->texts.push_back(std::move(pending.text));
        event.text = poller->texts.back().c_str();
        event.finished = pending.finished;
        event.n_tokens = pending.n_tokens;
        event.logprobs_json = nullptr;
        if (!pending.logprobs.empty()) {
            poller->logprobs.push_back(json::dump(logprob_entries(tokenizer, pending.logprobs)));
            event.logprobs_json = poller->logprobs.back().c_str();
        }
    }
    return n;
}

void cancel_request(vllm_request* request) {
    if (request->stream)
        request->stream->cancel();
    else
        request->call->cancel();
}

void settle_pull(const vllm_request* request) {
    vllm_request* r = const_cast<vllm_request*>(request);
    DeliveryEnd end;
    vllm_status status = VLLM_OK;
    std::string error;
    const char* finish_reason = nullptr;
    if (is_pull_completion(r)) {
        // No delivery thread: delivered once the engine is done with it,
        // with the engine's status unless it was cancelled.
        if (!r->stream->engine_done()) return;
        const RequestStream::Result result = r->stream->result();
        end.terminal = !r->stream->cancel_requested();  // its terminal event, not the drop of a cancel
        if (end.terminal && result.status != VLLM_OK) {
            status = result.status;
            error = result.error;
        }
        finish_reason = result.finish_reason;
    } else if (is_pull_call(r)) {
        if (!r->call->engine_done()) return;
        end.terminal = !r->call->cancelled();
        if (end.terminal) {
            const chat::ChoiceCall::Outcome outcome = r->call->outcome();
            status = outcome.status;
            error = outcome.error;
        }
    } else {
        return;
    }
    std::lock_guard<std::mutex> lock(r->mutex);
    if (r->delivered) return;
    settle_locked(r, end, status, error, finish_reason);
}

bool wait_delivered(vllm_request* request, int32_t timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    if (request->pull) {
        if (timeout_ms < 0) {
            if (request->stream)
                request->stream->wait_engine_done();
            else
                request->call->wait_engine_done();
        } else if (request->stream ? !request->stream->wait_engine_done_until(deadline)
                                   : !request->call->wait_engine_done_until(deadline)) {
            return false;
        }
        settle_pull(request);
    }
    std::unique_lock<std::mutex> lock(request->mutex);
    auto delivered = [&] { return request->delivered; };
    if (timeout_ms < 0) {
        request->delivered_cv.wait(lock, delivered);
        return true;
    }
    return request->delivered_cv.wait_until(lock, deadline, delivered);
}

bool on_delivery_thread(const vllm_request* request) { return std::this_thread::get_id() == request->delivery_id; }

void free_request(vllm_request* request) {
    cancel_request(request);
    if (on_delivery_thread(request)) {
        // Called from its own callback: the delivery thread cleans up once
        // the callback returns (it cannot join itself).
        std::lock_guard<std::mutex> lock(request->mutex);
        request->free_from_callback = true;
        return;
    }
    if (request->delivery.joinable())
        request->delivery.join();
    else if (request->stream)  // a pull completion: the engine may still run its logits processor
        request->stream->wait_engine_done();
    else
        request->call->wait_engine_done();
    if (request->pull) request->pull->detach();
    delete request;
}

const RequestStream& completion_stream(const vllm_request* request) {
    if (!request->stream)
        throw_invalid_argument(
            "an OpenAI call (chat or completions) has no engine completion: its events carry the response");
    return *request->stream;
}

void require_delivered(const vllm_request* request) {
    settle_pull(request);
    vllm_request* r = const_cast<vllm_request*>(request);
    std::lock_guard<std::mutex> lock(r->mutex);
    if (!r->delivered) throw_invalid_argument("the request is still running (wait for it first)");
    if (r->status != VLLM_OK) throw Error(r->status, r->error);
}

}  // namespace vllm::api
