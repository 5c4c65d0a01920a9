// The engine's per-token log-probabilities (token ids) as a chat response
// shows them: each token as its raw bytes, special tokens by their text
// (vLLM shows "<|im_end|>" too when it is sampled).
#pragma once
#include <vector>

#include "chat/chat_response.h"
#include "engine/request_stream.h"
#include "tokenizer/tokenizer.h"

namespace vllm::chat {

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer);

}  // namespace vllm::chat
