// The vllm.h entry points: validate, convert, call the engine, catch
// everything, set the thread's last error. No engine logic lives here, and
// no delivery: every request is a consumer of the pull primitive
// (api/delivery.h).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "api/delivery.h"
#include "api/handles.h"
#include "api/output_json.h"
#include "chat/chat_service.h"
#include "chat/embedding_service.h"
#include "chat/score_service.h"
#include "chat/classify_service.h"
#include "chat/pooling_service.h"
#include "chat/responses_output.h"
#include "chat/responses_request.h"
#include "engine/engine.h"
#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json.h"
#include "util/json_fields.h"
#include "util/utf8.h"
#include "vllm.h"

using vllm::api::EngineReference;

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

}  // namespace

using vllm::api::chat_service;
using vllm::api::completion_service;

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
        const vllm::api::DeliveryEnd end = vllm::api::deliver_events(*stream, cb, user_data, [] { return false; });
        if (end.stop_returned) return;  // stopped by the callback: OK
        const vllm::RequestStream::Result r = stream->result();
        if (r.status != VLLM_OK) throw vllm::Error(r.status, r.error);
    });
}

namespace {

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

vllm_status submit_request(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                           int32_t priority, vllm_token_callback cb, void* user_data, vllm_request** out) {
    return guarded([&] {
        check_submit_arguments(engine, prompt, params, cb, out);
        *out = vllm::api::start_callback_completion(
            engine, engine->engine->submit(prompt, sampling_config(engine, *params), priority), false, cb, user_data);
    });
}

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
        *out = vllm::api::start_callback_completion(
            engine,
            submit_with_options(engine, nullptr, prompt_token_ids, n_prompt_token_ids, *params, priority, logprobs,
                                nullptr),
            logprobs >= 0, cb, user_data);
    });
}

vllm_status vllm_request_submit_with_options(vllm_engine* engine, const char* prompt, const int32_t* prompt_token_ids,
                                             int32_t n_prompt_token_ids, const vllm_sampling_params* params,
                                             int32_t priority, int32_t logprobs, const char* options_json,
                                             vllm_token_callback cb, void* user_data, vllm_request** out) {
    return guarded([&] {
        check_callback_submit(engine, params, cb, out);
        require_one_prompt(prompt, prompt_token_ids);
        *out = vllm::api::start_callback_completion(
            engine,
            submit_with_options(engine, prompt, prompt_token_ids, n_prompt_token_ids, *params, priority, logprobs,
                                options_json),
            logprobs >= 0, cb, user_data);
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
        *out = vllm::api::start_callback_chat(engine, chat_service(engine).prepare_request(request_json), cb,
                                              user_data);
    });
}

vllm_status vllm_request_cancel(vllm_request* request) {
    return guarded([&] {
        require_non_null(request, "request");
        vllm::api::cancel_request(request);
    });
}

vllm_status vllm_request_wait(vllm_request* request) {
    g_last_error.clear();
    if (request == nullptr) return fail(VLLM_ERR_INVALID_ARGUMENT, "request is NULL");
    if (vllm::api::on_delivery_thread(request))
        return fail(VLLM_ERR_INVALID_ARGUMENT, "vllm_request_wait must not be called from the request's own callback");
    vllm::api::wait_delivered(request, -1);
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
        if (vllm::api::on_delivery_thread(request))
            vllm::throw_invalid_argument("vllm_request_wait_for must not be called from the request's own callback");
        if (!vllm::api::wait_delivered(request, timeout_ms)) return;  // RUNNING
        std::lock_guard<std::mutex> lock(request->mutex);
        out->state = request->state;
        out->status = request->status;
        out->error = request->error.c_str();
        out->finish_reason = request->finish_reason;
    });
}

bool vllm_request_done(const vllm_request* request) {
    if (request == nullptr) return false;
    vllm::api::settle_pull(request);
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered;
}

const char* vllm_request_error(const vllm_request* request) {
    if (request == nullptr) return "";
    vllm::api::settle_pull(request);
    std::lock_guard<std::mutex> lock(const_cast<vllm_request*>(request)->mutex);
    return request->delivered ? request->error.c_str() : "";
}

void vllm_request_free(vllm_request* request) {
    if (request != nullptr) vllm::api::free_request(request);
}

vllm_status vllm_request_completion(const vllm_request* request, vllm_completion* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(request, "request");
        require_non_null(out, "out");
        const vllm::RequestStream& stream = vllm::api::completion_stream(request);
        vllm::api::require_delivered(request);
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
        const vllm::RequestStream& stream = vllm::api::completion_stream(request);
        vllm::api::require_delivered(request);
        const vllm::RequestStream::Result result = stream.result();
        *out_json = copy_string(vllm::api::output_json(engine->engine->tokenizer(), result, request->logprobs));
    });
}

vllm_status vllm_request_prompt_logprobs(vllm_engine* engine, const vllm_request* request, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(request, "request");
        require_non_null(out_json, "out_json");
        const std::optional<std::vector<vllm::TokenLogprob>> entries = vllm::api::completion_stream(request).prompt_logprobs();
        if (!entries)
            vllm::throw_invalid_argument("the request has no prompt logprobs yet (asked for with the option "
                                         "\"prompt_logprobs\"; set once its prompt is computed, before its first "
                                         "token's event)");
        *out_json = copy_string(vllm::json::dump(vllm::api::prompt_logprob_entries(engine->engine->tokenizer(), *entries)));
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
            vllm::api::completion_stream(request).output_tokens(static_cast<size_t>(from), static_cast<size_t>(count));
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

namespace {

// The prompt ids a protocol body renders to (`prompt_ids` of the engine's
// chat service and the body), handed over as vllm_tokenize hands them.
using PromptIds = std::function<std::vector<int32_t>(const vllm::chat::ChatService&, std::string_view)>;

vllm_status tokenize_request(vllm_engine* engine, const char* request_json, int32_t** out_ids, int32_t* out_n_ids,
                             const PromptIds& prompt_ids) {
    if (out_ids != nullptr) *out_ids = nullptr;
    if (out_n_ids != nullptr) *out_n_ids = 0;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_ids, "out_ids");
        require_non_null(out_n_ids, "out_n_ids");
        copy_ids(prompt_ids(chat_service(engine), request_json), out_ids, out_n_ids);
    });
}

}  // namespace

vllm_status vllm_chat_tokenize(vllm_engine* engine, const char* request_json, int32_t** out_ids,
                               int32_t* out_n_ids) {
    return tokenize_request(engine, request_json, out_ids, out_n_ids,
                            [](const vllm::chat::ChatService& service, std::string_view body) {
                                return vllm::chat::ChatService::prompt_ids(*service.prepare_request(body));
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

vllm_status vllm_engine_kv_events_enable(vllm_engine* engine) {
    return guarded([&] {
        require_non_null(engine, "engine");
        engine->engine->enable_kv_events();
    });
}

vllm_status vllm_engine_kv_events_take(vllm_engine* engine, int32_t timeout_ms, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(out_json, "out_json");
        if (timeout_ms < 0) vllm::throw_invalid_argument("timeout_ms must be >= 0");
        *out_json = copy_string(engine->engine->take_kv_events_json(timeout_ms));
    });
}

vllm_status vllm_lora_adapter_add(vllm_engine* engine, int32_t id, const char* name, const char* path) {
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(name, "name");
        require_non_null(path, "path");
        engine->engine->add_lora(id, name, path);
    });
}

vllm_status vllm_lora_adapter_remove(vllm_engine* engine, int32_t id) {
    return guarded([&] {
        require_non_null(engine, "engine");
        engine->engine->remove_lora(id);
    });
}

vllm_status vllm_lora_adapters(vllm_engine* engine, char** out_json) {
    return guarded([&] {
        if (out_json != nullptr) *out_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(out_json, "out_json");
        vllm::json::Value list = vllm::json::Value::array();
        for (const vllm::LoraSpec& spec : engine->engine->list_loras()) {
            vllm::json::Value entry = vllm::json::Value::object();
            entry.set("id", int64_t(spec.id));
            entry.set("name", spec.name);
            entry.set("path", spec.path);
            list.push_back(std::move(entry));
        }
        *out_json = copy_string(vllm::json::dump(list));
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
        const int32_t n = vllm::api::poll_events(poller, timeout_ms, events, max_events);
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
        *out = vllm::api::start_pull_completion(
            engine, poller, tag,
            submit_with_options(engine, prompt, prompt_token_ids, n_prompt_token_ids, *params, priority, logprobs,
                                options_json),
            logprobs >= 0);
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
        *out = vllm::api::start_pull_chat(engine, poller, tag, chat_service(engine).prepare_request(request_json));
    });
}

vllm_status vllm_completion_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                        const char* request_json, vllm_request** out) {
    return guarded([&] {
        check_pull_arguments(engine, poller, out);
        require_non_null(request_json, "request_json");
        *out = vllm::api::start_pull_openai_completion(engine, poller, tag,
                                                       completion_service(engine).prepare_request(request_json));
    });
}

vllm_status vllm_messages_submit_pull(vllm_engine* engine, vllm_poller* poller, uint64_t tag,
                                      const char* request_json, vllm_request** out) {
    return guarded([&] {
        check_pull_arguments(engine, poller, out);
        require_non_null(request_json, "request_json");
        *out = vllm::api::start_pull_messages(
            engine, poller, tag, vllm::chat::prepare_messages_request(chat_service(engine), request_json));
    });
}

vllm_status vllm_messages_tokenize(vllm_engine* engine, const char* request_json, int32_t** out_ids,
                                   int32_t* out_n_ids) {
    return tokenize_request(engine, request_json, out_ids, out_n_ids, vllm::chat::messages_prompt_ids);
}

vllm_status vllm_embed(vllm_engine* engine, const char* const* texts, int32_t n_texts, vllm_embedding_result* out) {
    if (out != nullptr) std::memset(out, 0, sizeof *out);
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(texts, "texts");
        require_non_null(out, "out");
        if (n_texts <= 0) vllm::throw_invalid_argument("n_texts must be positive (got " + std::to_string(n_texts) + ")");
        std::vector<vllm::chat::CompletionPrompt> inputs(n_texts);
        for (int32_t i = 0; i < n_texts; ++i) {
            if (texts[i] == nullptr) vllm::throw_invalid_argument("texts[" + std::to_string(i) + "] is NULL");
            inputs[i].is_text = true;
            inputs[i].text = texts[i];
        }
        const vllm::chat::Embeddings result =
            vllm::chat::embed_inputs(*engine->engine, inputs, {}, 0, /*add_special_tokens=*/true, 0);
        const size_t dim = result.vectors.front().size();
        auto* values = static_cast<float*>(std::malloc(size_t(n_texts) * dim * sizeof(float)));
        if (values == nullptr) throw std::bad_alloc();
        for (size_t i = 0; i < result.vectors.size(); ++i)
            std::memcpy(values + i * dim, result.vectors[i].data(), dim * sizeof(float));
        out->values = values;
        out->n_embeddings = n_texts;
        out->dim = static_cast<int32_t>(dim);
        out->prompt_tokens = static_cast<int32_t>(result.prompt_tokens);
    });
}

void vllm_embedding_result_free(vllm_embedding_result* out) {
    if (out == nullptr) return;
    std::free(out->values);
    std::memset(out, 0, sizeof *out);
}

vllm_status vllm_embeddings(vllm_engine* engine, const char* request_json, char** out_json) {
    if (out_json != nullptr) *out_json = nullptr;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_json, "out_json");
        *out_json = copy_string(vllm::chat::run_embeddings_request(*engine->engine, request_json));
    });
}

namespace {
// vllm_score and vllm_rerank: a protocol-room call from a body to its JSON.
vllm_status run_json_call(vllm_engine* engine, const char* request_json, char** out_json,
                          std::string (*call)(vllm::Engine&, std::string_view)) {
    if (out_json != nullptr) *out_json = nullptr;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_json, "out_json");
        *out_json = copy_string(call(*engine->engine, request_json));
    });
}
}  // namespace

vllm_status vllm_score(vllm_engine* engine, const char* request_json, char** out_json) {
    return run_json_call(engine, request_json, out_json, vllm::chat::run_score_request);
}

vllm_status vllm_rerank(vllm_engine* engine, const char* request_json, char** out_json) {
    return run_json_call(engine, request_json, out_json, vllm::chat::run_rerank_request);
}

vllm_status vllm_classify(vllm_engine* engine, const char* request_json, char** out_json) {
    return run_json_call(engine, request_json, out_json, vllm::chat::run_classify_request);
}

vllm_status vllm_pooling(vllm_engine* engine, const char* request_json, char** out_json) {
    return run_json_call(engine, request_json, out_json, vllm::chat::run_pooling_request);
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

// ---- The Responses API over the chat road (additive) ----

struct vllm_responses_call {
    vllm::chat::ResponsesWriter writer;
};

vllm_status vllm_responses_begin(const char* request_json, const char* history_json, const char* response_id,
                                 int64_t created_at, vllm_responses_call** out_call, char** out_chat_json) {
    return guarded([&] {
        require_non_null(out_call, "out_call");
        require_non_null(out_chat_json, "out_chat_json");
        *out_call = nullptr;
        *out_chat_json = nullptr;
        require_non_null(request_json, "request_json");
        require_non_null(response_id, "response_id");
        const vllm::json::Value body = vllm::json::parse_object(request_json, "the request");
        vllm::json::Value history = nullptr;
        if (history_json != nullptr && history_json[0] != '\0') history = vllm::json::parse(history_json);
        vllm::chat::ResponsesRequest request = vllm::chat::read_responses_request(body, history);
        vllm::json::Value conversation = history.is_array() ? history : vllm::json::Value::array();
        for (const vllm::json::Value& item : request.input_items.items()) conversation.push_back(item);
        auto call = std::unique_ptr<vllm_responses_call>(new vllm_responses_call{
            vllm::chat::ResponsesWriter(std::move(request.echo), std::move(conversation), response_id, created_at)});
        *out_chat_json = copy_string(vllm::json::dump(request.chat_request));
        *out_call = call.release();
    });
}

vllm_status vllm_responses_feed(vllm_responses_call* call, const char* chat_json, char** out_events_json) {
    return guarded([&] {
        require_non_null(out_events_json, "out_events_json");
        *out_events_json = nullptr;
        require_non_null(call, "call");
        require_non_null(chat_json, "chat_json");
        const vllm::json::Value output = vllm::json::parse_object(chat_json, "the chat output");
        vllm::json::Value events = vllm::json::Value::array();
        const vllm::json::Value* object = output.find("object");
        if (object != nullptr && object->is_string() && object->as_string() == "chat.completion") {
            call->writer.on_completion(output);
        } else {
            for (vllm::json::Value& event : call->writer.on_chunk(output)) events.push_back(std::move(event));
        }
        *out_events_json = copy_string(vllm::json::dump(events));
    });
}

vllm_status vllm_responses_finish(vllm_responses_call* call, char** out_json) {
    return guarded([&] {
        require_non_null(out_json, "out_json");
        *out_json = nullptr;
        require_non_null(call, "call");
        vllm::json::Value events = vllm::json::Value::array();
        for (vllm::json::Value& event : call->writer.closing()) events.push_back(std::move(event));
        vllm::json::Value out = vllm::json::Value::object();
        out.set("events", std::move(events));
        out.set("response", call->writer.response());
        out.set("conversation", call->writer.conversation());
        *out_json = copy_string(vllm::json::dump(out));
    });
}

void vllm_responses_free(vllm_responses_call* call) { delete call; }

}  // extern "C"
