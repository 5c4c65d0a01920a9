// What the scheduler and the KV cache manager know of a request, as vLLM
// V1's core sees `v1/request.py`: its token ids, how many of them have K/V
// in the cache, its place in the policies' order and its status. Nothing of
// the output side (detokenizer, stream, grammar, sampling) is here: the
// engine's Request (engine/request.h) owns one of these and keeps that to
// itself, so core/ depends on no layer above it and its tests need neither
// a model nor a tokenizer.
//
// Seams for what is being built on it:
// - Speculative decoding (issue 12): draft tokens wait in spec_token_ids;
//   the scheduler schedules num_tokens_with_spec() - num_computed_tokens,
//   so a decode may be 1 + k tokens. Drafts the target model rejects are
//   dropped by lowering num_computed_tokens back to the accepted length
//   (their blocks stay allocated and are overwritten by the next step).
// - KV transfer (issue 13): a connector's tokens loaded from elsewhere are
//   adopted like a prefix-cache hit (num_computed_tokens moves forward at
//   admission); a request waiting for such blocks stays WAITING.
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

enum class RequestStatus { WAITING, RUNNING, FINISHED };

class SchedulerRequest {
public:
    // `arrival` is unique per engine and increases with submission: it is
    // the policies' tie-breaker and the request's id.
    SchedulerRequest(uint64_t arrival_, int32_t priority_, std::vector<int32_t> prompt)
        : arrival(arrival_), priority(priority_), num_prompt_tokens(static_cast<int>(prompt.size())),
          tokens_(std::move(prompt)) {}
    SchedulerRequest(const SchedulerRequest&) = delete;
    SchedulerRequest& operator=(const SchedulerRequest&) = delete;

    // Prompt then output: what the KV cache must hold.
    const std::vector<int32_t>& tokens() const { return tokens_; }
    int num_tokens() const { return static_cast<int>(tokens_.size()); }
    int num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
    // The tokens the next steps compute: the accepted ones, then any drafts.
    int num_tokens_with_spec() const { return num_tokens() + static_cast<int>(spec_token_ids.size()); }

    // A token the engine accepted (sampled or forced by a grammar).
    void append_token(int32_t token) { tokens_.push_back(token); }

    const uint64_t arrival;
    const int32_t priority;  // lower runs first under the priority policy
    const int num_prompt_tokens;
    std::vector<int32_t> spec_token_ids;  // draft tokens to verify next step (none without a drafter)
    // The prefix cache's hash of each full block of tokens() so far
    // (block_hash_chain.h): computed once, extended by the KV cache manager
    // as tokens fill blocks, so no lookup hashes a prefix twice.
    std::vector<uint64_t> block_hashes;
    // 0: the base model; else the LoRA adapter it runs, by the adapter's
    // registration number (unique per engine): the prefix cache's hash chain
    // starts from it, so two adapters (and the base model) never share KV
    // blocks, and the scheduler counts distinct ones against max_loras.
    uint64_t adapter_key = 0;

    // false: every token is computed, none adopted from the prefix cache
    // or a KV connector (a request that wants each prompt position's
    // logits, vLLM's prompt_logprobs, as vLLM V1 does for it).
    bool reads_prefix_cache = true;
    // At most this many tokens a step, shared by every request with one in
    // the step (0: the step's budget): it bounds the logits rows that such
    // requests' prefill chunks take together.
    int max_tokens_per_step = 0;
    // Its prompt is computed in one step or not at all (an encoder's pooling
    // request attends over the whole prompt at once): it is admitted only
    // when all of its uncomputed tokens fit the step's budget.
    bool whole_prompt = false;
    // A sentence pair's prompt (a cross-encoder's query then document):
    // the position its second segment starts at, whose tokens are of token
    // type 1 where the model has token types (0: one segment).
    int32_t second_segment_start = 0;

    // Its grammar's next mask is being computed off the engine loop (vLLM's
    // WAITING_FOR_FSM): the scheduler passes it over, waiting or running,
    // until the engine clears this; the others go on meanwhile.
    bool waiting_for_grammar = false;

    RequestStatus status = RequestStatus::WAITING;
    int num_computed_tokens = 0;  // tokens whose K/V is in the cache
    int num_cached_prompt_tokens = 0;  // prefix-cache hit on first admission (stats)
    bool admitted_once = false;

private:
    std::vector<int32_t> tokens_;
};

}  // namespace vllm
