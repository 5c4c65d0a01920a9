#include "api/handles.h"

namespace vllm::api {

const chat::ChatService& chat_service(vllm_engine* handle) {
    std::lock_guard<std::mutex> lock(handle->chat_mutex);
    if (!handle->chat) {
        Engine* engine = handle->engine.get();
        handle->chat = std::make_unique<chat::ChatService>(
            engine->tokenizer(), engine->chat_template(), engine->model_name(), handle->chat_parsers,
            [engine](std::vector<int32_t> prompt_ids, SamplingConfig sampling, int32_t priority) {
                return engine->submit_tokens(std::move(prompt_ids), std::move(sampling), priority);
            },
            engine->max_model_len(), &engine->grammar_compiler());
    }
    return *handle->chat;
}

}  // namespace vllm::api
