// An OpenAI /v1/completions (legacy completions) request, validated and
// typed. The fields it shares with chat (model, sampling, n, priority,
// stream, stream_options, response_format and vLLM's structured outputs,
// return_token_ids, return_tokens_as_token_ids) are read by
// openai_request.h's one parser, so a bad value gets chat's answer; the
// completions API's own:
//
//   prompt      a string, a list of strings, a list of token ids or a list
//               of token id lists (non-empty): each prompt runs `n` choices,
//               numbered prompt-major (prompt_index * n + i, as vLLM does)
//   max_tokens  16 by default; 0 only with echo ("echo without
//               generation": one token runs, for the prompt's logprobs, and
//               is not shown; the choice finishes "length" with 0 tokens)
//   logprobs    an integer 0..20: the legacy logprobs object per choice
//   echo        each choice's text (and logprobs) starts with its prompt;
//               an echoed prompt's logprobs come with the outputs' (vLLM's
//               rule: prompt_logprobs defaults to logprobs with echo)
//   prompt_logprobs  vLLM's: each choice shows its prompt's logprobs
//   best_of     only equal to n; suffix: refused (no insertion)
//
// Fields it does not know are ignored (the C ABI's rule); the HTTP server
// refuses those OpenAI does not document. Errors: INVALID_ARGUMENT naming
// the field.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/openai_request.h"

namespace vllm::chat {

struct CompletionPrompt {
    bool is_text = false;
    std::string text;          // is_text
    std::vector<int32_t> ids;  // !is_text
};

struct CompletionRequest : OpenAIRequest {
    std::vector<CompletionPrompt> prompts;  // at least one
    bool echo = false;
    int32_t logprobs = -1;         // -1: none; else the legacy object with that many alternatives
    bool prompt_logprobs = false;  // vLLM's prompt_logprobs asked for: shown on each choice
    bool echo_only = false;        // max_tokens 0 with echo (see above)
};

CompletionRequest parse_completion_request(std::string_view request_json);

// `body[key]` as prompts: a string, a list of strings, a list of token ids or
// a list of token id lists (non-empty); also /v1/embeddings' `input`.
std::vector<CompletionPrompt> read_prompt_inputs(const json::Value& body, const char* key);

}  // namespace vllm::chat
