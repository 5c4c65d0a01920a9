// Whether a prompt fits the engine's context (max_model_len), refused in
// vLLM's words: INVALID_ARGUMENT "This model's maximum context length is N
// tokens. However, your request has M input tokens. Please reduce the length
// of the input messages." OpenAI clients (LangChain, litellm) recognise that
// text as a context overflow, and the Python layer turns it into
// ContextLengthExceededError (the C ABI has no status of its own for it).
// Used where a prompt is submitted (Engine::submit_tokens) and where a chat
// call is validated before it is (ChatService::prepare_request).
#pragma once
#include <cstddef>

namespace vllm {

void check_prompt_fits(size_t prompt_tokens, int max_model_len);

}  // namespace vllm
