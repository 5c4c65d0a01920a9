// Whether a prompt fits the engine's context (max_model_len), refused in
// vLLM's words: INVALID_ARGUMENT "This model's maximum context length is N
// tokens. However, your request has M input tokens. Please reduce the length
// of the input messages." OpenAI clients (LangChain, litellm) recognise that
// text as a context overflow, and the Python layer turns it into
// ContextLengthExceededError (the C ABI has no status of its own for it).
// Used where a prompt is submitted (Engine::submit_tokens, through
// check_prompt_ids below) and where a chat call is validated before it is
// (ChatService::prepare_request).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vllm {

void check_prompt_fits(size_t prompt_tokens, int max_model_len);

// Every check a prompt's ids get before they run: not empty, within
// max_model_len (check_prompt_fits; max_model_len <= 0: not checked), each
// id inside the vocabulary. INVALID_ARGUMENT naming what is wrong. Used by
// Engine::submit_tokens and by a completions call validated before it is
// submitted (CompletionService::prepare_request).
void check_prompt_ids(const std::vector<int32_t>& ids, int vocab_size, int max_model_len);

}  // namespace vllm
