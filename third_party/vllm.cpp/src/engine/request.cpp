#include "engine/request.h"

namespace vllm {

Request::Request(uint64_t arrival, int32_t priority, std::vector<int32_t> prompt_, SamplingConfig sampling_,
                 const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream_)
    : sched(arrival, priority, prompt_),
      prompt(std::move(prompt_)),
      sampling(std::move(sampling_)),
      rng(sampling.has_seed ? sampling.seed : std::random_device{}()),
      output_processor(tokenizer, sampling),
      stream(std::move(stream_)) {}

}  // namespace vllm
