// One request inside the engine: its tokens, sampling state, KV progress and
// output side. Owned by the engine loop (scheduler lists hold pointers);
// only its RequestStream is shared with the consumer.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "engine/request_stream.h"
#include "sample/sampling_config.h"
#include "structured/structured_output.h"

namespace vllm {

enum class RequestStatus { WAITING, RUNNING, FINISHED };

struct Request {
    Request(uint64_t arrival, int32_t priority, std::vector<int32_t> prompt, SamplingConfig sampling,
            const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream);
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;

    int num_tokens() const { return static_cast<int>(tokens.size()); }
    int num_prompt_tokens() const { return static_cast<int>(prompt.size()); }
    int num_output_tokens() const { return static_cast<int>(output.size()); }
    // The tokens the next steps compute: the accepted ones, then any drafts.
    int num_tokens_with_spec() const { return num_tokens() + static_cast<int>(spec_token_ids.size()); }

    const uint64_t arrival;  // submission order, the tie-breaker of every policy
    const int32_t priority;  // lower runs first under the priority policy
    const std::vector<int32_t> prompt;
    std::vector<int32_t> output;
    std::vector<int32_t> tokens;  // prompt then output: what the KV cache must hold
    std::vector<int32_t> spec_token_ids;  // draft tokens to verify next step (none without a proposer)
    const SamplingConfig sampling;
    std::mt19937_64 rng;  // per request, so batching never changes a seeded draw
    OutputProcessor output_processor;
    std::shared_ptr<RequestStream> stream;
    std::unique_ptr<structured::GrammarMatcher> matcher;  // with a structured-output constraint

    RequestStatus status = RequestStatus::WAITING;
    int num_computed_tokens = 0;  // tokens whose K/V is in the cache
    int num_cached_prompt_tokens = 0;  // prefix-cache hit on first admission (stats)
    bool admitted_once = false;
};

}  // namespace vllm
