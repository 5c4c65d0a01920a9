// The one renderer of the engine's per-token log-probabilities in the
// OpenAI protocol's shapes, from the same entries (vllm::TokenLogprob):
// - chat's: each token as its raw bytes (special tokens by their text: vLLM
//   shows "<|im_end|>" too when it is sampled), with its alternatives;
// - the legacy completions object {tokens, token_logprobs, top_logprobs,
//   text_offset}, whose offsets continue across a stream's chunks;
// - vLLM's prompt_logprobs: null for the prompt's first token (nothing
//   predicts it), then {"<id>": {logprob, rank, decoded_token}} per token.
// With as_token_ids (vLLM's return_tokens_as_token_ids) tokens are named
// "token_id:<id>" (chat's bytes included).
// The chat call renders chat's shape through it, the completions call the
// other two.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "chat/chat_response.h"
#include "engine/request_stream.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"

namespace vllm::chat {

// How a response names a token.
class TokenNaming {
public:
    TokenNaming(const Tokenizer& tokenizer, bool as_token_ids) : tokenizer_(tokenizer), as_token_ids_(as_token_ids) {}
    // Its raw bytes, or "token_id:<id>".
    std::string bytes(int32_t token) const;
    // Its bytes as text (each ill-formed part U+FFFD, as Python's
    // errors="replace" decodes), or "token_id:<id>".
    std::string text(int32_t token) const;
    bool as_token_ids() const { return as_token_ids_; }

private:
    const Tokenizer& tokenizer_;
    bool as_token_ids_;
};

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer, bool as_token_ids);

// The legacy completions logprobs object of `unpredicted` (names with null
// logprobs: an echoed prompt's first token) then `entries`, for text that
// starts at `text_offset` characters (code points) into the choice's text;
// text_offset is advanced past them.
json::Value legacy_logprobs(const std::vector<std::string>& unpredicted,
                            const std::vector<vllm::TokenLogprob>& entries, const TokenNaming& naming,
                            size_t& text_offset);

// vLLM's prompt_logprobs of a prompt whose tokens 1, 2, ... have `entries`.
json::Value prompt_logprobs_json(const std::vector<vllm::TokenLogprob>& entries, const Tokenizer& tokenizer);

// The text of `ids` as the engine detokenizes it (special tokens kept).
std::string detokenized(const Tokenizer& tokenizer, const std::vector<int32_t>& ids);

}  // namespace vllm::chat
