#include "engine/request.h"

#include <algorithm>

namespace vllm {

Request::Request(uint64_t arrival, int32_t priority, std::vector<int32_t> prompt_, SamplingConfig sampling_,
                 const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream_)
    : sched(arrival, priority, prompt_),
      prompt(std::move(prompt_)),
      sampling(std::move(sampling_)),
      rng(sampling.has_seed ? sampling.seed : std::random_device{}()),
      output_processor(tokenizer, sampling),
      stream(std::move(stream_)) {
    if (sampling.prompt_logprobs >= 0) {
        // Every position's logits: no prefix-cache hit may skip one, and a
        // prefill chunk's rows stay within about 64 MiB of floats.
        sched.reads_prefix_cache = false;
        sched.max_tokens_per_step = std::max(16, static_cast<int>((64 << 20) / 4 / std::max(1, tokenizer.vocab_size())));
    }
}

}  // namespace vllm
