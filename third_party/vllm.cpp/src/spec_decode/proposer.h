// A draft-token proposer: given a request's tokens so far, guesses how it
// continues. The engine verifies every guess against the target model, so a
// proposer only changes speed, never output. Runs on the engine loop thread.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "sample/sampling_config.h"
#include "spec_decode/speculative_config.h"

namespace vllm {

// One request to draft for in a step (propose_batch).
struct DraftRequest {
    uint64_t id = 0;
    const std::vector<int32_t>* tokens = nullptr;  // the prompt, then the output
    int num_prompt_tokens = 0;
    int max_tokens = 0;
    // The draft model drafts greedily or from its own distribution at
    // these settings; the model-free proposers ignore it.
    const SamplingConfig* sampling = nullptr;
    std::mt19937_64* rng = nullptr;         // the request's generator: a seeded request drafts the same again
    std::vector<int32_t>* draft = nullptr;  // filled (cleared first)
};

class Proposer {
public:
    virtual ~Proposer() = default;

    // Drafts for every request of a step at once (the draft model batches
    // them into one forward per draft position); by default each alone.
    virtual void propose_batch(const std::vector<DraftRequest>& batch);
    // The distribution request `id`'s last drafts were drawn from (one row
    // of vocab_size probabilities per draft token), or null when each draft
    // token is a point mass (model-free proposers, greedy drafts).
    virtual const std::vector<float>* draft_probabilities(uint64_t) const { return nullptr; }
    // The request holds no KV now (preempted, or waiting): drop any cache
    // kept alongside it. Its tokens stay, so it may be drafted for again.
    virtual void release_cache(uint64_t) {}

    // Fills `draft` (cleared first) with at most `max_tokens` tokens that
    // may follow `tokens` (the prompt, then the output) of request `id`.
    virtual void propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, int max_tokens,
                         std::vector<int32_t>& draft) = 0;
    // The request is gone (finished, aborted or failed): drop its state.
    // `tokens` are its final tokens (suffix decoding keeps finished outputs).
    virtual void finished(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, bool completed) = 0;
};

// The model-free proposer of config.method (ngram or suffix; the draft
// model's is built by the engine, which loads it: DraftModelProposer).
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

}  // namespace vllm
