// The vllm.h entry points: validate, convert, call the engine, catch
// everything, set the thread's last error. No engine logic lives here.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "engine/engine.h"
#include "util/error.h"
#include "vllm.h"

struct vllm_engine {
    std::unique_ptr<vllm::Engine> engine;
};

// No request can be created until non-blocking requests land; the type
// exists so the request entry points have their ABI shape.
struct vllm_request {};

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

[[noreturn]] void not_implemented(const char* what) {
    vllm::throw_invalid_argument(std::string(what) + " is not implemented yet in this engine");
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
        vllm::SamplingConfig sampling = vllm::SamplingConfig::from_c(*params);
        vllm::GenerationResult r = engine->engine->generate(prompt, sampling, nullptr);
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
        vllm::SamplingConfig sampling = vllm::SamplingConfig::from_c(*params);
        engine->engine->generate(prompt, sampling, [&](const std::string& delta, bool finished) {
            return cb(delta.c_str(), finished, user_data);
        });
    });
}

vllm_status vllm_request_submit(vllm_engine* engine, const char* prompt, const vllm_sampling_params* params,
                                vllm_token_callback cb, void* user_data, vllm_request** out) {
    (void)user_data;
    return guarded([&] {
        if (out != nullptr) *out = nullptr;
        require_non_null(out, "out");
        require_non_null(engine, "engine");
        require_non_null(prompt, "prompt");
        require_non_null(params, "params");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        not_implemented("non-blocking requests (vllm_request_submit)");
    });
}

vllm_status vllm_request_cancel(vllm_request* request) {
    return guarded([&] {
        require_non_null(request, "request");
        not_implemented("non-blocking requests (vllm_request_cancel)");
    });
}

vllm_status vllm_request_wait(vllm_request* request) {
    return guarded([&] {
        require_non_null(request, "request");
        not_implemented("non-blocking requests (vllm_request_wait)");
    });
}

bool vllm_request_done(const vllm_request* request) {
    (void)request;  // no request can exist yet; NULL is false by contract
    return false;
}

const char* vllm_request_error(const vllm_request* request) {
    (void)request;
    return "";
}

void vllm_request_free(vllm_request* request) {
    (void)request;  // vllm_request_submit never hands out a handle yet: nothing to free
}

vllm_status vllm_chat(vllm_engine* engine, const char* request_json, char** out_response_json) {
    return guarded([&] {
        if (out_response_json != nullptr) *out_response_json = nullptr;
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(out_response_json, "out_response_json");
        not_implemented("chat completions (vllm_chat)");
    });
}

vllm_status vllm_chat_stream(vllm_engine* engine, const char* request_json, vllm_token_callback cb,
                             void* user_data) {
    (void)user_data;
    return guarded([&] {
        require_non_null(engine, "engine");
        require_non_null(request_json, "request_json");
        require_non_null(reinterpret_cast<const void*>(cb), "callback");
        not_implemented("streaming chat completions (vllm_chat_stream)");
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
