// The vllm.h entry points: validate, convert, call the engine, catch
// everything, set the thread's last error. No engine logic lives here.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <condition_variable>
#include <mutex>
#include <memory>

#include "chat/chat_service.h"
#include "engine/engine.h"
#include "util/error.h"
#include "vllm.h"

struct vllm_engine {
    std::unique_ptr<vllm::Engine> engine;
    vllm::chat::ChatParserNames chat_parsers;
    // Built at the first chat call (where the spec refuses unknown parser
    // names and broken templates); a failed build is retried by the next.
    std::mutex chat_mutex;
    std::unique_ptr<vllm::chat::ChatService> chat;
};

// A non-blocking request: the engine-side stream plus the delivery thread
// that runs the caller's callback. The engine never sees the callback, so a
// callback can block or re-enter the library without stalling the engine.
struct vllm_request {
    std::shared_ptr<vllm::RequestStream> stream;
    vllm_token_callback cb = nullptr;
    void* user_data = nullptr;
    std::thread delivery;
    std::thread::id delivery_id;  // set before the thread runs user code

    std::mutex mutex;
    std::condition_variable delivered_cv;
    bool delivered = false;          // the delivery thread is done with the callback
    bool free_from_callback = false; // vllm_request_free ran on the delivery thread
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

const vllm::chat::ChatService& chat_service(vllm_engine* handle) {
    std::lock_guard<std::mutex> lock(handle->chat_mutex);
    if (!handle->chat) {
        vllm::Engine* engine = handle->engine.get();
        handle->chat = std::make_unique<vllm::chat::ChatService>(
            engine->tokenizer(), engine->chat_template(), engine->model_name(), handle->chat_parsers,
            [engine](std::vector<int32_t> prompt_ids, vllm::SamplingConfig sampling, int32_t priority) {
                return engine->submit_tokens(std::move(prompt_ids), std::move(sampling), priority);
            });
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
    return guarded([&] {
        require_non_null(out, "out");
        *out = nullptr;
        require_non_null(params, "params");
        vllm::EngineConfig config = vllm::EngineConfig::from_c(*params);
        auto handle = std::make_unique<vllm_engine>();
        handle->engine = std::make_unique<vllm::Engine>(config);
        handle->chat_parsers = {config.tool_parser, config.reasoning_parser};
        *out = handle.release();
    });
}

void vllm_engine_free(vllm_engine* engine) { delete engine; }

vllm_status vllm_complete(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                          vllm_completion* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        auto stream = engine->engine->submit(prompt, vllm::SamplingConfig::from_c(*params), 0);
        stream->wait_engine_done();
        const vllm::RequestStream::Result r = stream->result();
        if (r.status != VLLM_OK) throw vllm::Error(r.status, r.error);
        out->text = copy_string(r.text);
        out->finish_reason = r.finish_reason;
        out->prompt_tokens = r.prompt_tokens;
        out->completion_tokens = r.completion_tokens;
    });
}

vllm_status vllm_complete_stream(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                                 vllm_token_callback cb, void* user_data) {
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        auto stream = engine->engine->submit(prompt, vllm::SamplingConfig::from_c(*params), 0);
        // The calling thread is this request's delivery thread.
        vllm::RequestStream::Event event;
        while (stream->next(event)) {
            if (!event.finished && event.delta.empty()) continue;  // a step with no text
            if (!cb(event.delta.c_str(), event.finished, user_data)) {
                // Stopped by the callback: OK, once the engine has let go of
                // the request (it may still run its logits processor).
                stream->cancel();
                stream->wait_engine_done();
                return;
            }
        }
        const vllm::RequestStream::Result r = stream->result();
        if (r.status != VLLM_OK) throw vllm::Error(r.status, r.error);
    });
}

namespace {

// The delivery thread: hands each event to the callback until the terminal
// one, a stop, or a cancel; then publishes the terminal status.
void deliver(vllm_request* request) {
    vllm::RequestStream::Event event;
    bool stopped = false;
    while (!stopped && request->stream->next(event)) {
        if (!event.finished && event.delta.empty()) continue;  // a step with no text
        // false on the terminal event is a natural finish, not a stop.
        if (!request->cb(event.delta.c_str(), event.finished, request->user_data) && !event.finished) {
            request->stream->cancel();
            stopped = true;
        }
        if (request->free_from_callback) break;
    }
    // The engine lets go of a cancelled request at its next step; waiting
    // for that makes the request's result final once it reads as done.
    request->stream->wait_engine_done();
    const vllm::RequestStream::Result r = request->stream->result();
    bool self_free;
    {
        std::lock_guard<std::mutex> lock(request->mutex);
        // An engine failure counts when its terminal event was delivered;
        // a cancelled or stopped request ends OK.
        if (!stopped && !request->stream->cancel_requested() && r.status != VLLM_OK) {
            request->status = r.status;
            request->error = r.error;
        }
        request->delivered = true;
        self_free = request->free_from_callback;
    }
    request->delivered_cv.notify_all();
    if (self_free) {
        // vllm_request_free was called from the callback: finish it here.
        request->delivery.detach();
        delete request;
    }
}

vllm_status submit_request(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                           int32_t priority, vllm_token_callback cb, void* user_data, vllm_request** out) {
    return guarded([&] {
        if (out != nullptr) *out = nullptr;
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        auto request = std::make_unique<vllm_request>();
        request->cb = cb;
        request->user_data = user_data;
        request->stream = engine->engine->submit(prompt, vllm::SamplingConfig::from_c(*params), priority);
        vllm_request* raw = request.get();
        {
            // delivery_id must be set before the thread can call back.
            std::lock_guard<std::mutex> lock(raw->mutex);
            raw->delivery = std::thread([raw] {
                { std::lock_guard<std::mutex> wait_for_id(raw->mutex); }
                deliver(raw);
            });
            raw->delivery_id = raw->delivery.get_id();
        }
        *out = request.release();
    });
}

bool on_delivery_thread(const vllm_request* request) { return std::this_thread::get_id() == request->delivery_id; }

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

vllm_status vllm_request_cancel(vllm_request* request) {
    return guarded([&] {
        require_non_null(request, "request");
        request->stream->cancel();
    });
}

vllm_status vllm_request_wait(vllm_request* request) {
    g_last_error.clear();
    if (request == nullptr) return fail(VLLM_ERR_INVALID_ARGUMENT, "request is NULL");
    if (on_delivery_thread(request))
        return fail(VLLM_ERR_INVALID_ARGUMENT, "vllm_request_wait must not be called from the request's own callback");
    std::unique_lock<std::mutex> lock(request->mutex);
    request->delivered_cv.wait(lock, [&] { return request->delivered; });
    if (request->status != VLLM_OK) return fail(request->status, request->error);
    return VLLM_OK;
}

bool vllm_request_done(const vllm_request* request) {
    if (request == nullptr) return false;
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered;
}

const char* vllm_request_error(const vllm_request* request) {
    if (request == nullptr) return "";
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered ? request->error.c_str() : "";
}

void vllm_request_free(vllm_request* request) {
    if (request == nullptr) return;
    request->stream->cancel();
    if (on_delivery_thread(request)) {
        // Called from its own callback: the delivery thread cleans up once
        // the callback returns (it cannot join itself).
        std::lock_guard<std::mutex> lock(request->mutex);
        request->free_from_callback = true;
        return;
    }
    request->delivery.join();
    delete request;
}

vllm_status vllm_request_completion(const vllm_request* request, vllm_completion* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(request, "request");
        require_non_null(out, "out");
        vllm_request* r = const_cast<vllm_request*>(request);
        {
            std::lock_guard<std::mutex> lock(r->mutex);
            if (!r->delivered) vllm::throw_invalid_argument("the request is still running (wait for it first)");
            if (r->status != VLLM_OK) throw vllm::Error(r->status, r->error);
        }
        const vllm::RequestStream::Result result = r->stream->result();
        out->text = copy_string(result.text);
        out->finish_reason = result.finish_reason;
        out->prompt_tokens = result.prompt_tokens;
        out->completion_tokens = result.completion_tokens;
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

void vllm_string_free(char* s) { std::free(s); }

void vllm_completion_free(vllm_completion* completion) {
    if (completion == nullptr) return;
    std::free(completion->text);
    std::memset(completion, 0, sizeof *completion);
}

const char* vllm_last_error(void) { return g_last_error.c_str(); }

const char* vllm_version(void) { return VLLM_VERSION_STRING; }

int32_t vllm_abi_version(void) { return VLLM_ABI_VERSION; }

}  // extern "C"
