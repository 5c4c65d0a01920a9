#include "chat/choice_logprobs.h"

namespace vllm::chat {

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer, bool as_token_ids) {
    const auto name = [&](int32_t token) {
        return as_token_ids ? "token_id:" + std::to_string(token) : tokenizer.token_bytes(token, /*skip_special=*/false);
    };
    std::vector<TokenLogprob> out;
    out.reserve(engine_logprobs.size());
    for (const vllm::TokenLogprob& sampled : engine_logprobs) {
        TokenLogprob entry;
        entry.token = name(sampled.token);
        entry.logprob = sampled.logprob;
        for (const auto& [token, logprob] : sampled.top) entry.top_logprobs.push_back({name(token), logprob});
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace vllm::chat
