// The engine's per-token log-probabilities (token ids) as a chat response
// shows them: each token as its raw bytes, special tokens by their text
// (vLLM shows "<|im_end|>" too when it is sampled); with as_token_ids
// (vLLM's return_tokens_as_token_ids) as "token_id:<id>", bytes included.
#pragma once
#include <vector>

#include "chat/chat_response.h"
#include "engine/request_stream.h"
#include "tokenizer/tokenizer.h"

namespace vllm::chat {

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer, bool as_token_ids);

}  // namespace vllm::chat
