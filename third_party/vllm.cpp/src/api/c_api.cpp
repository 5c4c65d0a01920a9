// The vllm.h entry points: validate, convert, call the engine, catch
// everything, set the thread's last error. No engine logic lives here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <condition_variable>
#include <mutex>
#include <memory>

#include "chat/chat_service.h"
#include "engine/engine.h"
#include "engine/ready_queue.h"
#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json.h"
#include "util/utf8.h"
#include "vllm.h"

struct vllm_engine {
    std::unique_ptr<vllm::Engine> engine;
    vllm::chat::ChatParserNames chat_parsers;
    // Built at the first chat call (where the spec refuses unknown parser
    // names and broken templates); a failed build is retried by the next.
    std::mutex chat_mutex;
    std::unique_ptr<vllm::chat::ChatService> chat;
    // The caller's handle plus one per live request and poller: the engine
    // is torn down when the last of them lets go (vllm_engine_free may come
    // first; see "Request lifecycle" in vllm.h).
    std::atomic<int> references{1};
};

namespace {

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

}  // namespace

// A ReadyQueue and the strings of the last poll's events.
struct vllm_poller {
    explicit vllm_poller(vllm_engine* owner) : engine(owner) {}
    EngineReference engine;
    std::shared_ptr<vllm::ReadyQueue> queue = std::make_shared<vllm::ReadyQueue>();
    std::vector<std::string> texts;
    std::vector<std::string> logprobs;
};

// A non-blocking request: one engine request (a completion: its stream) or
// one chat call (its choices, reached through chat_cancel), plus the
// delivery thread that runs the caller's callback. The engine never sees the
// callback, so a callback can block or re-enter the library without stalling
// the engine. A pull request has no callback: its poller reports its output
// (`pull`); a pull completion has no thread at all, a pull chat call's thread
// runs the call and pushes its texts into the entry's own stream.
struct vllm_request {
    explicit vllm_request(vllm_engine* owner) : engine(owner) {}
    EngineReference engine;  // first: the engine outlives everything below
    std::shared_ptr<vllm::RequestStream> stream;              // completion; null for chat
    std::shared_ptr<vllm::chat::ChatCancel> chat_cancel;      // chat; null for a completion
    std::shared_ptr<vllm::PullEntry> pull;                    // pull requests only
    bool logprobs = false;  // a completion submitted with logprobs >= 0
    vllm_token_callback cb = nullptr;
    void* user_data = nullptr;
    std::thread delivery;
    std::thread::id delivery_id;  // set before the thread runs user code

    std::mutex mutex;
    std::condition_variable delivered_cv;
    bool delivered = false;          // the delivery thread is done with the callback
    bool free_from_callback = false; // vllm_request_free ran on the delivery thread
    vllm_request_state state = VLLM_REQUEST_RUNNING;  // how it ended, once delivered
    const char* finish_reason = nullptr;  // a completion's, once delivered
    vllm_status status = VLLM_OK;    // terminal status, once delivered
    std::string error;               // its message ("" for OK)
};

namespace {

thread_local std::string g_last_error;

vllm_status fail(vllm_status status, const std::string& message) {
    g_last_error = message;
    return status;
}

// Runs body(), mapping any exception to a status and the last error.
template <typename Body>
vllm_status guarded(Body&& body) {
    g_last_error.clear();
    try {
        body();
        return VLLM_OK;
    } catch (const vllm::Error& e) {
        return fail(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return fail(VLLM_ERR_RUNTIME, "out of memory");
    } catch (const std::exception& e) {
        return fail(VLLM_ERR_UNKNOWN, std::string("internal error: ") + e.what());
    } catch (...) {
        return fail(VLLM_ERR_UNKNOWN, "internal error: unknown exception");
    }
}

void require_non_null(const void* p, const char* name) {
    if (p == nullptr) vllm::throw_invalid_argument(std::string(name) + " is NULL");
}

char* copy_string(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
}

// A request's sampling options, its constraint compiled by the engine's
// compiler (within its budget, off the engine loop).
vllm::SamplingConfig sampling_config(vllm_engine* engine, const vllm_sampling_params& params) {
    return vllm::SamplingConfig::from_c(params, &engine->engine->grammar_compiler());
}

const vllm::chat::ChatService& chat_service(vllm_engine* handle) {
    std::lock_guard<std::mutex> lock(handle->chat_mutex);
    if (!handle->chat) {
        vllm::Engine* engine = handle->engine.get();
        handle->chat = std::make_unique<vllm::chat::ChatService>(
            engine->tokenizer(), engine->chat_template(), engine->model_name(), handle->chat_parsers,
            [engine](std::vector<int32_t> prompt_ids, vllm::SamplingConfig sampling, int32_t priority) {
                return engine->submit_tokens(std::move(prompt_ids), std::move(sampling), priority);
            },
            engine->max_model_len(), &engine->grammar_compiler());
    }
    return *handle->chat;
}

}  // namespace

extern "C" {

vllm_model_params vllm_model_params_default(void) {
    vllm_model_params p;
    std::memset(&p, 0, sizeof p);
    return p;
}

vllm_sampling_params vllm_sampling_params_default(void) {
    vllm_sampling_params p;
    std::memset(&p, 0, sizeof p);
    p.temperature = 1.0f;
    p.top_p = 1.0f;
    p.max_tokens = 16;
    p.repetition_penalty = 1.0f;
    return p;
}

vllm_status vllm_engine_load(const vllm_model_params* params, vllm_engine** out) {
    return vllm_engine_load_with_options(params, nullptr, out);
}

void vllm_engine_free(vllm_engine* engine) {
    if (engine != nullptr) EngineReference::release(engine);
}

vllm_status vllm_complete(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                          vllm_completion* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        auto stream = engine->engine->submit(prompt, sampling_config(engine, *params), 0);
        stream->wait_engine_done();
        const vllm::RequestStream::Result r = stream->result();
        if (r.status != VLLM_OK) throw vllm::Error(r.status, r.error);
        out->text = copy_string(r.text);
        out->finish_reason = r.finish_reason;
        out->prompt_tokens = r.prompt_tokens;
        out->completion_tokens = r.completion_tokens;
    });
}

}  // extern "C"

namespace {

// How a callback's delivery ended.
struct DeliveryEnd {
    bool stop_returned = false;  // the callback returned false (on the terminal call too)
    bool terminal = false;       // the terminal call was made
};

// The one event loop of callback delivery (a blocking stream's caller, or a
// request's delivery thread): hands each event that carries text, then the
// terminal one, to cb until the stream ends (terminal event, or a cancel),
// cb returns false (before the terminal event that cancels the request), or
// leave() says so after a call. Returns once the engine has let go of the
// request (it may still run its logits processor), so its result is final.
template <typename Leave>
DeliveryEnd deliver_events(vllm::RequestStream& stream, vllm_token_callback cb, void* user_data, Leave leave) {
    DeliveryEnd end;
    vllm::RequestStream::Event event;
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

}  // namespace

extern "C" {

vllm_status vllm_complete_stream(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                                 vllm_token_callback cb, void* user_data) {
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        auto stream = engine->engine->submit(prompt, sampling_config(engine, *params), 0);
        // The calling thread is this request's delivery thread.
        const DeliveryEnd end = deliver_events(*stream, cb, user_data, [] { return false; });
        if (end.stop_returned) return;  // stopped by the callback: OK
        const vllm::RequestStream::Result r = stream->result();
        if (r.status != VLLM_OK) throw vllm::Error(r.status, r.error);
    });
}

namespace {

// How a request whose delivery ended with `end` and `status` ended.
vllm_request_state state_of(const DeliveryEnd& end, vllm_status status) {
    if (status != VLLM_OK) return VLLM_REQUEST_FAILED;
    if (end.stop_returned) return VLLM_REQUEST_STOPPED;
    return end.terminal ? VLLM_REQUEST_FINISHED : VLLM_REQUEST_CANCELLED;
}

// Publishes how the request ended (with its mutex held); finish_reason is
// its stream's (null for a chat call).
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
    const vllm::RequestStream::Result r = request->stream->result();
    // An engine failure counts when its terminal event was taken (false on
    // it is a natural finish); a cancelled or stopped request ends OK.
    if (!request->stream->cancel_requested() && r.status != VLLM_OK)
        finish_delivery(request, end, r.status, r.error, r.finish_reason);
    else
        finish_delivery(request, end, VLLM_OK, "", r.finish_reason);
}

// The delivery thread of a chat call: runs it (streaming chunks, or the one
// chat.completion JSON as a single terminal callback) and publishes its
// status. A callback returning false, or a cancel, stops every choice.
void deliver_chat(vllm_request* request, const vllm::chat::ChatService& service,
                  const vllm::chat::ChatService::Prepared& prepared) {
    vllm::chat::ChatCancel& cancel = *request->chat_cancel;
    DeliveryEnd end;
    auto call = [&](const char* text, bool finished) {
        if (cancel.cancelled()) return false;  // a stop, a cancel or a free
        end.terminal = finished;
        if (!request->cb(text, finished, request->user_data)) {
            end.stop_returned = true;
            // false on the terminal call is a natural finish.
            if (!finished) {
                cancel.cancel();
                return false;
            }
        }
        return true;
    };
    const vllm_status status = guarded([&] {
        if (vllm::chat::ChatService::wants_stream(prepared)) {
            service.stream(prepared, [&](const std::string& chunk, bool finished) { return call(chunk.c_str(), finished); },
                           &cancel);
        } else {
            const std::string response = service.complete(prepared, &cancel);
            call(response.c_str(), true);
        }
    });
    const std::string error = g_last_error;  // the callback may call into the library
    // A failed call still ends with the terminal callback (as a failed
    // stream does), so a caller waiting for it is always woken.
    if (status != VLLM_OK && !vllm::chat::ChatService::wants_stream(prepared)) call("", true);
    if (cancel.cancelled())
        finish_delivery(request, end, VLLM_OK, "");
    else
        finish_delivery(request, end, status, error);
}

// Starts `body(request)` on the request's delivery thread and hands the
// request to the caller.
void start_delivery(std::unique_ptr<vllm_request> request, std::function<void(vllm_request*)> body,
                    vllm_request** out) {
    vllm_request* raw = request.get();
    {
        // delivery_id must be set before the thread can call back.
        std::lock_guard<std::mutex> lock(raw->mutex);
        raw->delivery = std::thread([raw, body = std::move(body)] {
            { std::lock_guard<std::mutex> wait_for_id(raw->mutex); }
            body(raw);
        });
        raw->delivery_id = raw->delivery.get_id();
    }
    *out = request.release();
}

// The checks every callback submit entry point makes but the prompt's;
// clears *out first.
void check_callback_submit(vllm_engine* engine, const vllm_sampling_params* params, vllm_token_callback cb,
                           vllm_request** out) {
    if (out != nullptr) *out = nullptr;
    require_non_null(out, "out");
    require_non_null(engine, "engine");
    require_non_null(params, "params");
    require_non_null(reinterpret_cast<const void*>(cb), "callback");
}

// The checks every submit entry point of one prompt form makes.
void check_submit_arguments(vllm_engine* engine, const void* prompt, const vllm_sampling_params* params,
                            vllm_token_callback cb, vllm_request** out) {
    check_callback_submit(engine, params, cb, out);
    require_non_null(prompt, "prompt");
}

// Starts delivery of one engine request.
void start_completion(vllm_engine* engine, std::shared_ptr<vllm::RequestStream> stream, bool logprobs,
                      vllm_token_callback cb, void* user_data, vllm_request** out) {
    auto request = std::make_unique<vllm_request>(engine);
    request->logprobs = logprobs;
    request->cb = cb;
    request->user_data = user_data;
    request->stream = std::move(stream);
    start_delivery(std::move(request), deliver, out);
}

vllm_status submit_request(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                           int32_t priority, vllm_token_callback cb, void* user_data, vllm_request** out) {
    return guarded([&] {
        check_submit_arguments(engine, prompt, params, cb, out);
        start_completion(engine, engine->engine->submit(prompt, sampling_config(engine, *params), priority),
                         false, cb, user_data, out);
    });
}

void cancel_request(vllm_request* request) {
    if (request->stream) {
        request->stream->cancel();
    } else {
        request->chat_cancel->cancel();
        // A pull chat call's consumer gets its end once the call has stopped.
        if (request->pull) request->pull->stream().cancel();
    }
}

bool is_pull_completion(const vllm_request* request) { return request->pull && request->stream; }

// A pull completion has no delivery thread: it counts as delivered once the
// engine is done with it, with the engine's status unless it was cancelled.
void settle_pull_completion(const vllm_request* request) {
    if (!is_pull_completion(request) || !request->stream->engine_done()) return;
    vllm_request* r = const_cast<vllm_request*>(request);
    const vllm::RequestStream::Result result = r->stream->result();
    DeliveryEnd end;
    end.terminal = !r->stream->cancel_requested();  // its terminal event, not the drop of a cancel
    const bool failed = end.terminal && result.status != VLLM_OK;
    std::lock_guard<std::mutex> lock(r->mutex);
    if (r->delivered) return;
    settle_locked(r, end, failed ? result.status : VLLM_OK, failed ? result.error : "", result.finish_reason);
}

// Waits until the request's delivery has finished (a pull completion: until
// the engine is done with it), at most timeout_ms (< 0: without limit);
// whether it has.
bool wait_delivered(vllm_request* request, int32_t timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    if (is_pull_completion(request)) {
        if (timeout_ms < 0)
            request->stream->wait_engine_done();
        else if (!request->stream->wait_engine_done_until(deadline))
            return false;
        settle_pull_completion(request);
    }
    std::unique_lock<std::mutex> lock(request->mutex);
    auto delivered = [&] { return request->delivered; };
    if (timeout_ms < 0) {
        request->delivered_cv.wait(lock, delivered);
        return true;
    }
    return request->delivered_cv.wait_until(lock, deadline, delivered);
}

// The completion request's stream; INVALID_ARGUMENT for a chat request
// (whose callback received the whole response).
const vllm::RequestStream& completion_stream(const vllm_request* request) {
    if (!request->stream)
        vllm::throw_invalid_argument("a chat request has no completion: its callback received the response");
    return *request->stream;
}

// Throws unless delivery has finished without an error.
void require_delivered(const vllm_request* request) {
    settle_pull_completion(request);
    vllm_request* r = const_cast<vllm_request*>(request);
    std::lock_guard<std::mutex> lock(r->mutex);
    if (!r->delivered) vllm::throw_invalid_argument("the request is still running (wait for it first)");
    if (r->status != VLLM_OK) throw vllm::Error(r->status, r->error);
}

vllm::json::Value logprob_entry(const vllm::Tokenizer& tokenizer, int32_t token, float logprob) {
    vllm::json::Value entry = vllm::json::Value::object();
    entry.set("token_id", static_cast<int64_t>(token));
    vllm::json::Value bytes = vllm::json::Value::array();
    for (unsigned char c : tokenizer.token_bytes(token, /*skip_special=*/false)) bytes.push_back(static_cast<int>(c));
    entry.set("bytes", std::move(bytes));
    entry.set("logprob", vllm::finite_logprob(logprob));
    return entry;
}

// The JSON array of `sampled` (vllm_request_output's "logprobs" entries).
vllm::json::Value logprob_entries(const vllm::Tokenizer& tokenizer, const std::vector<vllm::TokenLogprob>& sampled) {
    vllm::json::Value entries = vllm::json::Value::array();
    for (const vllm::TokenLogprob& token_logprob : sampled) {
        vllm::json::Value entry = logprob_entry(tokenizer, token_logprob.token, token_logprob.logprob);
        if (token_logprob.rank > 0) entry.set("rank", static_cast<int64_t>(token_logprob.rank));
        vllm::json::Value top = vllm::json::Value::array();
        for (const auto& [token, logprob] : token_logprob.top) top.push_back(logprob_entry(tokenizer, token, logprob));
        entry.set("top_logprobs", std::move(top));
        entries.push_back(std::move(entry));
    }
    return entries;
}

// A request's prompt_logprobs as vllm_request_output shows them: null for the
// first prompt token (nothing precedes it), then one entry each.
vllm::json::Value prompt_logprob_entries(const vllm::Tokenizer& tokenizer,
                                         const std::vector<vllm::TokenLogprob>& entries) {
    vllm::json::Value prompt = logprob_entries(tokenizer, entries);
    prompt.items().insert(prompt.items().begin(), vllm::json::Value());
    return prompt;
}

std::string output_json(const vllm::Tokenizer& tokenizer, const vllm::RequestStream::Result& result, bool logprobs) {
    vllm::json::Value out = vllm::json::Value::object();
    vllm::json::Value ids = vllm::json::Value::array();
    for (int32_t id : result.output_tokens) ids.push_back(static_cast<int64_t>(id));
    out.set("token_ids", std::move(ids));
    // null without logprobs
    out.set("logprobs", logprobs ? logprob_entries(tokenizer, result.logprobs) : vllm::json::Value());
    if (result.prompt_logprobs) out.set("prompt_logprobs", prompt_logprob_entries(tokenizer, *result.prompt_logprobs));
    return vllm::json::dump(out);
}

bool on_delivery_thread(const vllm_request* request) { return std::this_thread::get_id() == request->delivery_id; }

// Submits a text prompt (prompt) or token ids with log-probabilities on
// request (logprobs -1: none) and the options of
// vllm_request_submit_with_options (NULL: none).
std::shared_ptr<vllm::RequestStream> submit_with_options(vllm_engine* engine, const char* prompt,
                                                         const int32_t* prompt_token_ids, int32_t n_prompt_token_ids,
                                                         const vllm_sampling_params& params, int32_t priority,
                                                         int32_t logprobs, const char* options_json) {
    if (logprobs < -1 || logprobs > 20)
        vllm::throw_invalid_argument("logprobs=" + std::to_string(logprobs) + ": must be -1 (none) or between 0 and 20");
    vllm::SamplingConfig sampling = sampling_config(engine, params);
    sampling.logprobs = logprobs;
    if (options_json != nullptr) vllm::read_sampling_options(options_json, sampling);
    if (prompt != nullptr) return engine->engine->submit(prompt, std::move(sampling), priority);
    if (n_prompt_token_ids < 0) vllm::throw_invalid_argument("n_prompt_token_ids is negative");
    std::vector<int32_t> ids(prompt_token_ids, prompt_token_ids + n_prompt_token_ids);
    return engine->engine->submit_tokens(std::move(ids), std::move(sampling), priority);
}

// A completion's prompt is text or token ids, never both.
void require_one_prompt(const char* prompt, const int32_t* prompt_token_ids) {
    if ((prompt == nullptr) == (prompt_token_ids == nullptr))
        vllm::throw_invalid_argument("give exactly one of prompt and prompt_token_ids");
}

// The checks both pull submits make; clears *out first.
void check_pull_arguments(vllm_engine* engine, vllm_poller* poller, vllm_request** out) {
    if (out != nullptr) *out = nullptr;
    require_non_null(out, "out");
    require_non_null(engine, "engine");
    require_non_null(poller, "poller");
    if (poller->engine.get() != engine) vllm::throw_invalid_argument("the poller belongs to another engine");
}

// A pull chat call's delivery thread pushes what a callback would get into
// the entry's stream (user_data); the terminal event follows the call's
// status (see vllm_chat_submit_pull).
bool push_chat_text(const char* text, bool /*finished*/, void* user_data) {
    static_cast<vllm::RequestStream*>(user_data)->push_step(text, {}, {});
    return true;
}

}  // namespace

vllm_status vllm_request_submit(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                                vllm_token_callback cb, void* user_data, vllm_request** out) {
    return submit_request(engine, prompt, params, 0, cb, user_data, out);
}

vllm_status vllm_request_submit_with_priority(vllm_engine* engine, const char* prompt,
                                              const vllm_sampling_params* params, int32_t priority,
                                              vllm_token_callback cb, void* user_data, vllm_request** out) {
    return submit_request(engine, prompt, params, priority, cb, user_data, out);
}

vllm_status vllm_request_submit_tokens(vllm_engine* engine, const int32_t* prompt_token_ids,
                                       int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                       int32_t priority, int32_t logprobs, vllm_token_callback cb, void* user_data,
                                       vllm_request** out) {
    return guarded([&] {
        check_submit_arguments(engine, prompt_token_ids, params, cb, out);
        start_completion(engine,
                         submit_with_options(engine, nullptr, prompt_token_ids, n_prompt_token_ids, *params,
                                             priority, logprobs, nullptr),
                         logprobs >= 0, cb, user_data, out);
    });
}

vllm_status vllm_request_submit_with_options(vllm_engine* engine, const char* prompt, const int32_t* prompt_token_ids,
                                             int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                             int32_t priority, int32_t logprobs, const char* options_json,
                                             vllm_token_callback cb, void* user_data, vllm_request** out) {
    return guarded([&] {
        check_callback_submit(engine, params, cb, out);
        require_one_prompt(prompt, prompt_token_ids);
        start_completion(engine,
                         submit_with_options(engine, prompt, prompt_token_ids, n_prompt_token_ids, *params, priority,
                                             logprobs, options_json),
                         logprobs >= 0, cb, user_data, out);
    });
}

vllm_status vllm_chat_submit(vllm_engine* engine, const char* request_json, vllm_token_callback cb, void* user_data,
                             vllm_request** out) {
    return guarded([&] {
        if (out != nullptr) *out = nullptr;
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        const vllm::chat::ChatService& service = chat_service(engine);
        std::shared_ptr<const vllm::chat::ChatService::Prepared> prepared = service.prepare_request(request_json);
        auto request = std::make_unique<vllm_request>(engine);
        request->cb = cb;
        request->user_data = user_data;
        request->chat_cancel = std::make_shared<vllm::chat::ChatCancel>();
        start_delivery(
            std::move(request), [&service, prepared](vllm_request* r) { deliver_chat(r, service, *prepared); }, out);
    });
}

vllm_status vllm_request_cancel(vllm_request* request) {
    return guarded([&] {
        require_non_null(request, "request");
        cancel_request(request);
    });
}

vllm_status vllm_request_wait(vllm_request* request) {
    g_last_error.clear();
    if (request == nullptr) return fail(VLLM_ERR_INVALID_ARGUMENT, "request is NULL");
    if (on_delivery_thread(request))
        return fail(VLLM_ERR_INVALID_ARGUMENT, "vllm_request_wait must not be called from the request's own callback");
    wait_delivered(request, -1);
    std::lock_guard<std::mutex> lock(request->mutex);
    if (request->status != VLLM_OK) return fail(request->status, request->error);
    return VLLM_OK;
}

vllm_status vllm_request_wait_for(vllm_request* request, int32_t timeout_ms, vllm_request_outcome* out) {
    if (out != nullptr) {
        std::memset(out, 0, sizeof *out);
        out->error = "";
    }
    return guarded([&] {
        require_non_null(request, "request");
        require_non_null(out, "out");
        if (on_delivery_thread(request))
            vllm::throw_invalid_argument("vllm_request_wait_for must not be called from the request's own callback");
        if (!wait_delivered(request, timeout_ms)) return;  // RUNNING
        std::lock_guard<std::mutex> lock(request->mutex);
        out->state = request->state;
        out->status = request->status;
        out->error = request->error.c_str();
        out->finish_reason = request->finish_reason;
    });
}

bool vllm_request_done(const vllm_request* request) {
    if (request == nullptr) return false;
    settle_pull_completion(request);
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered;
}

const char* vllm_request_error(const vllm_request* request) {
    if (request == nullptr) return "";
    settle_pull_completion(request);
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered ? request->error.c_str() : "";
}

void vllm_request_free(vllm_request* request) {
    if (request == nullptr) return;
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
    else  // a pull completion: the engine may still run its logits processor
        request->stream->wait_engine_done();
    if (request->pull) request->pull->detach();
    delete request;
}

vllm_status vllm_request_completion(const vllm_request* request, vllm_completion* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(request, "request");
        require_non_null(out, "out");
        const vllm::RequestStream& stream = completion_stream(request);
        require_delivered(request);
        const vllm::RequestStream::Result result = stream.result();
        out->text = copy_string(result.text);
        out->finish_reason = result.finish_reason;
        out->prompt_tokens = result.prompt_tokens;
        out->completion_tokens = result.completion_tokens;
    });
}

vllm_status vllm_request_output(vllm_engine* engine, const vllm_request* request, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(request, "request");
        require_non_null(out_json, "out_json");
        const vllm::RequestStream& stream = completion_stream(request);
        require_delivered(request);
        const vllm::RequestStream::Result result = stream.result();
        *out_json = copy_string(output_json(engine->engine->tokenizer(), result, request->logprobs));
    });
}

vllm_status vllm_request_prompt_logprobs(vllm_engine* engine, const vllm_request* request, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(request, "request");
        require_non_null(out_json, "out_json");
        const std::optional<std::vector<vllm::TokenLogprob>> entries = completion_stream(request).prompt_logprobs();
        if (!entries)
            vllm::throw_invalid_argument("the request has no prompt logprobs yet (asked for with the option "
                                         "\"prompt_logprobs\"; set once its prompt is computed, before its first "
                                         "token's event)");
        *out_json = copy_string(vllm::json::dump(prompt_logprob_entries(engine->engine->tokenizer(), *entries)));
    });
}

vllm_status vllm_request_token_ids(const vllm_request* request, int32_t from, int32_t count, int32_t* out_ids,
                                   int32_t* out_n) {
    return guarded([&] {
        if (out_n != nullptr) *out_n = 0;
        require_non_null(request, "request");
        require_non_null(out_n, "out_n");
        if (from < 0 || count < 0)
            vllm::throw_invalid_argument("from (" + std::to_string(from) + ") and count (" + std::to_string(count) +
                                         ") must be >= 0");
        if (count > 0) require_non_null(out_ids, "out_ids");
        const std::vector<int32_t> ids =
            completion_stream(request).output_tokens(static_cast<size_t>(from), static_cast<size_t>(count));
        std::copy(ids.begin(), ids.end(), out_ids);
        *out_n = static_cast<int32_t>(ids.size());
    });
}

namespace {

// Hands `ids` to the caller as a malloc'ed array (never NULL, even empty).
void copy_ids(const std::vector<int32_t>& ids, int32_t** out_ids, int32_t* out_n_ids) {
    auto* buffer = static_cast<int32_t*>(std::malloc(std::max<size_t>(1, ids.size()) * sizeof(int32_t)));
    if (buffer == nullptr) throw std::bad_alloc();
    std::copy(ids.begin(), ids.end(), buffer);
    *out_ids = buffer;
    *out_n_ids = static_cast<int32_t>(ids.size());
}

}  // namespace

vllm_status vllm_tokenize(vllm_engine* engine, const char* text, bool add_special_tokens, int32_t** out_ids,
                          int32_t* out_n_ids) {
    if (out_ids != nullptr) *out_ids = nullptr;
    if (out_n_ids != nullptr) *out_n_ids = 0;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(text, "text");
        require_non_null(out_ids, "out_ids");
        require_non_null(out_n_ids, "out_n_ids");
        if (!vllm::utf8::is_valid(text)) vllm::throw_invalid_argument("text is not valid UTF-8");
        // The same encoding vllm_request_submit gives a text prompt when
        // add_special_tokens is true.
        copy_ids(engine->engine->tokenizer().encode(text, add_special_tokens, /*parse_special=*/true), out_ids,
                 out_n_ids);
    });
}

vllm_status vllm_chat_tokenize(vllm_engine* engine, const char* request_json, int32_t** out_ids,
                               int32_t* out_n_ids) {
    if (out_ids != nullptr) *out_ids = nullptr;
    if (out_n_ids != nullptr) *out_n_ids = 0;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_ids, "out_ids");
        require_non_null(out_n_ids, "out_n_ids");
        const vllm::chat::ChatService& service = chat_service(engine);
        copy_ids(vllm::chat::ChatService::prompt_ids(*service.prepare_request(request_json)), out_ids, out_n_ids);
    });
}

void vllm_tokens_free(int32_t* ids) { std::free(ids); }

vllm_status vllm_detokenize(vllm_engine* engine, const int32_t* token_ids, int32_t n_token_ids,
                            bool skip_special_tokens, char** out_text) {
    if (out_text != nullptr) *out_text = nullptr;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(out_text, "out_text");
        if (n_token_ids < 0) vllm::throw_invalid_argument("n_token_ids is negative");
        if (n_token_ids > 0) require_non_null(token_ids, "token_ids");
        const vllm::Tokenizer& tokenizer = engine->engine->tokenizer();
        for (int32_t i = 0; i < n_token_ids; ++i)
            if (token_ids[i] < 0 || token_ids[i] >= tokenizer.vocab_size())
                vllm::throw_invalid_argument("token id " + std::to_string(token_ids[i]) + " at index " +
                                             std::to_string(i) + " is outside the vocabulary");
        vllm::IncrementalDetokenizer detokenizer(tokenizer, skip_special_tokens);
        std::string text;
        for (int32_t i = 0; i < n_token_ids; ++i) text += detokenizer.push(token_ids[i]);
        text += detokenizer.flush();
        *out_text = copy_string(text);
    });
}

vllm_status vllm_engine_stats(vllm_engine* engine, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(out_json, "out_json");
        *out_json = copy_string(engine->engine->stats().to_json());
    });
}

vllm_status vllm_chat(vllm_engine* engine, const char* request_json, char** out_response_json) {
    return guarded([&] {
        if (out_response_json != nullptr) *out_response_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_response_json, "out_response_json");
        *out_response_json = copy_string(chat_service(engine).complete(request_json));
    });
}

vllm_status vllm_chat_stream(vllm_engine* engine, const char* request_json, vllm_token_callback cb,
                             void* user_data) {
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        // The calling thread delivers every chunk.
        chat_service(engine).stream(request_json, [&](const std::string& chunk, bool finished) {
            return cb(chunk.c_str(), finished, user_data);
        });
    });
}

vllm_status vllm_poller_create(vllm_engine* engine, vllm_poller** out) {
    return guarded([&] {
        if (out != nullptr) *out = nullptr;
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        auto poller = std::make_unique<vllm_poller>(engine);
        *out = poller.release();
    });
}

void vllm_poller_free(vllm_poller* poller) {
    if (poller == nullptr) return;
    poller->queue->wait(0, SIZE_MAX);  // queued entries hold the queue: let go of them
    poller->queue->close_fd();         // the queue may outlive the poller; the descriptor does not
    delete poller;
}

vllm_status vllm_poller_poll(vllm_poller* poller, int32_t timeout_ms, vllm_event* events, int32_t max_events,
                             int32_t* out_n) {
    if (out_n != nullptr) *out_n = 0;
    return guarded([&] {
        require_non_null(poller, "poller");
        require_non_null(events, "events");
        require_non_null(out_n, "out_n");
        if (max_events <= 0) vllm::throw_invalid_argument("max_events must be positive");
        const std::vector<std::shared_ptr<vllm::PullEntry>> ready =
            poller->queue->wait(timeout_ms, static_cast<size_t>(max_events));
        // Reserved, so the strings never move while events point into them.
        poller->texts.clear();
        poller->texts.reserve(ready.size());
        poller->logprobs.clear();
        poller->logprobs.reserve(ready.size());
        const vllm::Tokenizer& tokenizer = poller->engine.get()->engine->tokenizer();
        int32_t n = 0;
        vllm::RequestStream::Pending pending;
        for (const std::shared_ptr<vllm::PullEntry>& entry : ready) {
            if (entry->detached() || !entry->take(pending)) continue;
            vllm_event& event = events[n++];
            event.tag = entry->tag();
            poller->texts.push_back(std::move(pending.text));
            event.text = poller->texts.back().c_str();
            event.finished = pending.finished;
            event.n_tokens = pending.n_tokens;
            event.logprobs_json = nullptr;
            if (!pending.logprobs.empty()) {
                poller->logprobs.push_back(vllm::json::dump(logprob_entries(tokenizer, pending.logprobs)));
                event.logprobs_json = poller->logprobs.back().c_str();
            }
        }
        *out_n = n;
    });
}

vllm_status vllm_poller_wake(vllm_poller* poller) {
    return guarded([&] {
        require_non_null(poller, "poller");
        poller->queue->wake();
    });
}

vllm_status vllm_poller_fd(vllm_poller* poller, int* out_fd) {
    if (out_fd != nullptr) *out_fd = -1;
    return guarded([&] {
        require_non_null(poller, "poller");
        require_non_null(out_fd, "out_fd");
        *out_fd = poller->queue->fd();
    });
}

vllm_status vllm_request_submit_pull_with_options(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                                  const char* prompt, const int32_t* prompt_token_ids,
                                                  int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                                  int32_t priority, int32_t logprobs, const char* options_json,
                                                  vllm_request** out) {
    return guarded([&] {
        check_pull_arguments(engine, poller, out);
        require_non_null(params, "params");
        require_one_prompt(prompt, prompt_token_ids);
        auto request = std::make_unique<vllm_request>(engine);
        request->stream = submit_with_options(engine, prompt, prompt_token_ids, n_prompt_token_ids, *params, priority,
                                              logprobs, options_json);
        request->logprobs = logprobs >= 0;
        request->pull = std::make_shared<vllm::PullEntry>(poller->queue, request->stream, tag, /*coalesce=*/true);
        request->pull->attach();
        *out = request.release();
    });
}

vllm_status vllm_request_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag, const char* prompt,
                                     const int32_t* prompt_token_ids, int32_t n_prompt_token_ids,
                                     const vllm_sampling_params* params, int32_t priority, int32_t logprobs,
                                     vllm_request** out) {
    return vllm_request_submit_pull_with_options(engine, poller, tag, prompt, prompt_token_ids, n_prompt_token_ids,
                                                 params, priority, logprobs, nullptr, out);
}

vllm_status vllm_chat_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag, const char* request_json,
                                  vllm_request** out) {
    return guarded([&] {
        check_pull_arguments(engine, poller, out);
        require_non_null(request_json, "request_json");
        const vllm::chat::ChatService& service = chat_service(engine);
        std::shared_ptr<const vllm::chat::ChatService::Prepared> prepared = service.prepare_request(request_json);
        auto output = std::make_shared<vllm::RequestStream>();
        auto request = std::make_unique<vllm_request>(engine);
        request->cb = push_chat_text;
        request->user_data = output.get();
        request->chat_cancel = std::make_shared<vllm::chat::ChatCancel>();
        request->pull = std::make_shared<vllm::PullEntry>(poller->queue, output, tag, /*coalesce=*/false);
        request->pull->attach();
        start_delivery(
            std::move(request),
            [&service, prepared, output](vllm_request* r) {
                deliver_chat(r, service, *prepared);
                vllm_status status;
                std::string error;
                {
                    std::lock_guard<std::mutex> lock(r->mutex);
                    status = r->status;
                    error = r->error;
                }
                output->finish(nullptr, status, error);  // the consumer's terminal event, status settled
            },
            out);
    });
}

void vllm_string_free(char* s) { std::free(s); }

void vllm_completion_free(vllm_completion* completion) {
    if (completion == nullptr) return;
    std::free(completion->text);
    std::memset(completion, 0, sizeof *completion);
}

const char* vllm_last_error(void) { return g_last_error.c_str(); }

const char* vllm_version(void) { return VLLM_VERSION_STRING; }

int32_t vllm_abi_version(void) { return VLLM_ABI_VERSION; }

vllm_status vllm_sampling_options_check(const char* options_json) {
    return guarded([&] {
        require_non_null(options_json, "options_json");
        vllm::SamplingConfig config;
        vllm::read_sampling_options(options_json, config);
    });
}

vllm_status vllm_engine_load_with_options(const vllm_model_params* params, const char* options_json,
                                          vllm_engine** out) {
    return guarded([&] {
        require_non_null(out, "out");
        *out = nullptr;
        require_non_null(params, "params");
        vllm::EngineConfig config = vllm::EngineConfig::from_c(*params, options_json != nullptr ? options_json : "");
        auto handle = std::make_unique<vllm_engine>();
        handle->engine = std::make_unique<vllm::Engine>(config);
        handle->chat_parsers = {config.tool_parser, config.reasoning_parser};
        // A template given at load is parsed at load, so a broken one is
        // refused here rather than at the first chat call.
        if (config.chat_template) chat_service(handle.get());
        *out = handle.release();
    });
}

}  // extern "C"
