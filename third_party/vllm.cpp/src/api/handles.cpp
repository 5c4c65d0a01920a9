#include "api/handles.h"

namespace vllm::api {

namespace {

chat::ChoiceCall::Submit engine_submit(Engine* engine) {
    return [engine](std::vector<int32_t> prompt_ids, SamplingConfig sampling, int32_t priority) {
        return engine->submit_tokens(std::move(prompt_ids), std::move(sampling), priority);
    };
}

}  // namespace

const chat::ChatService& chat_service(vllm_engine* handle) {
    std::lock_guard<std::mutex> lock(handle->chat_mutex);
    if (!handle->chat) {
        Engine* engine = handle->engine.get();
        handle->chat = std::make_unique<chat::ChatService>(engine->tokenizer(), engine->chat_template(),
                                                           engine->model_name(), handle->chat_parsers,
                                                           engine_submit(engine), engine->max_model_len(),
                                                           &engine->grammar_compiler());
    }
    return *handle->chat;
}

const chat::CompletionService& completion_service(vllm_engine* handle) {
    std::lock_guard<std::mutex> lock(handle->chat_mutex);
    if (!handle->completions) {
        Engine* engine = handle->engine.get();
        handle->completions = std::make_unique<chat::CompletionService>(
            engine->tokenizer(), engine->model_name(), engine_submit(engine), engine->max_model_len(),
            &engine->grammar_compiler());
    }
    return *handle->completions;
}

}  // namespace vllm::api
