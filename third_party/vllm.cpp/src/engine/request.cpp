#include "engine/request.h"

#include <algorithm>
#include <cmath>

namespace vllm {

Request::Request(uint64_t arrival, int32_t priority, std::vector<int32_t> prompt_, SamplingConfig sampling_,
                 const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream_)
    : sched(arrival, priority, prompt_),
      prompt(std::move(prompt_)),
      sampling(std::move(sampling_)),
      rng(sampling.has_seed ? sampling.seed : std::random_device{}()),
      output_processor(tokenizer, sampling),
      stream(std::move(stream_)),
      reasoning_gate(sampling.reasoning, tokenizer) {
    for (const std::string& word : sampling.bad_words) {
        const size_t start = word.find_first_not_of(' ');
        if (start == std::string::npos) continue;  // blank (the options refuse it)
        const std::vector<int32_t> alone = tokenizer.encode(word.substr(start), false, /*parse_special=*/true);
        bad_word_ids.push_back(alone);
        // After another word it may be other tokens: kept when that is a
        // different first token for as many tokens (vLLM's rule).
        const std::vector<int32_t> spaced = tokenizer.encode(" " + word.substr(start), false, true);
        if (!spaced.empty() && !alone.empty() && spaced.size() == alone.size() && spaced[0] != alone[0])
            bad_word_ids.push_back(spaced);
    }
    if (sampling.prompt_logprobs >= 0) {
        // Every position's logits: no prefix-cache hit may skip one, and a
        // prefill chunk's rows stay within about 64 MiB of floats.
        sched.reads_prefix_cache = false;
        constexpr int kRowFloats = (64 << 20) / sizeof(float);
        sched.max_tokens_per_step = std::max(16, kRowFloats / std::max(1, tokenizer.vocab_size()));
    }
}

bool Request::mask_bad_words(float* logits) const {
    bool masked = false;
    for (const std::vector<int32_t>& word : bad_word_ids) {
        if (word.empty() || word.size() - 1 > output.size()) continue;
        if (std::equal(word.begin(), word.end() - 1, output.end() - static_cast<std::ptrdiff_t>(word.size() - 1))) {
            logits[word.back()] = -INFINITY;
            masked = true;
        }
    }
    return masked;
}

}  // namespace vllm
