#include "engine/request.h"

namespace vllm {

Request::Request(uint64_t arrival_, int32_t priority_, std::vector<int32_t> prompt_, SamplingConfig sampling_,
                 const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream_)
    : arrival(arrival_),
      priority(priority_),
      prompt(std::move(prompt_)),
      tokens(prompt),
      sampling(std::move(sampling_)),
      rng(sampling.has_seed ? sampling.seed : std::random_device{}()),
      output_processor(tokenizer, sampling),
      stream(std::move(stream_)) {}

}  // namespace vllm
