#include "chat/choice_logprobs.h"

namespace vllm::chat {

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer) {
    std::vector<TokenLogprob> out;
    out.reserve(engine_logprobs.size());
    for (const vllm::TokenLogprob& sampled : engine_logprobs) {
        TokenLogprob entry;
        entry.token = tokenizer.token_bytes(sampled.token, /*skip_special=*/false);
        entry.logprob = sampled.logprob;
        for (const auto& [token, logprob] : sampled.top)
            entry.top_logprobs.push_back({tokenizer.token_bytes(token, /*skip_special=*/false), logprob});
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace vllm::chat
