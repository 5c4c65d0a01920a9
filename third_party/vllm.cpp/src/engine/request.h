// One request inside the engine: its scheduler-side state (SchedulerRequest:
// tokens, KV progress, priority, status) and everything the scheduler does
// not see: sampling state, output text, the stream and the grammar matcher.
// Owned by the engine loop (the scheduler's lists point at `sched`); only
// its RequestStream is shared with the consumer.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/scheduler_request.h"
#include "engine/output_processor.h"
#include "engine/reasoning_gate.h"
#include "engine/pooler.h"
#include "engine/request_stream.h"
#include "sample/sampling_config.h"
#include "structured/structured_output.h"

namespace vllm {

struct Request {
    Request(uint64_t arrival, int32_t priority, std::vector<int32_t> prompt, SamplingConfig sampling,
            const Tokenizer& tokenizer, std::shared_ptr<RequestStream> stream);
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;

    int num_prompt_tokens() const { return static_cast<int>(prompt.size()); }
    int num_output_tokens() const { return static_cast<int>(output.size()); }

    SchedulerRequest sched;
    // The same ids as sched.tokens(), split as the sampler's penalties and
    // the logits processor read them.
    const std::vector<int32_t> prompt;
    std::vector<int32_t> output;
    const SamplingConfig sampling;
    std::mt19937_64 rng;  // per request, so batching never changes a seeded draw
    OutputProcessor output_processor;
    std::shared_ptr<RequestStream> stream;
    // With a structured-output constraint; shared with a compile worker
    // while it computes the next mask (grammar_prep set).
    std::shared_ptr<structured::GrammarMatcher> matcher;
    // The matcher's next mask being computed off the loop: the worker sets
    // `error` (if any), then `done`; the loop takes it up before scheduling.
    struct GrammarPrep {
        std::atomic<bool> done{false};
        std::exception_ptr error;
    };
    std::shared_ptr<GrammarPrep> grammar_prep;
    // Holds the matcher back while the output is inside its reasoning
    // section (sampling.reasoning), and forces the section's end past its budget.
    ReasoningGate reasoning_gate;
    // The matcher applies now: there is one and the reasoning has ended.
    bool constrained() const { return matcher && !reasoning_gate.inside(); }
    // With sampling.prompt_logprobs: the entries of prompt tokens 1, 2, ...
    // computed so far (a recomputed prefill after preemption adds none
    // twice), handed to the stream once the prompt is done.
    std::vector<TokenLogprob> prompt_logprobs;
    bool prompt_logprobs_sent = false;
    // sampling.bad_words as token sequences (vLLM's rule: each word alone
    // and after a space); a sequence's last token is masked wherever the
    // output ends with the rest of it.
    std::vector<std::vector<int32_t>> bad_word_ids;
    // The LoRA adapter it runs (sampling.lora_int_id's registration, held for
    // the request's life; engine/lora_registry.h); nullptr: the base model.
    std::shared_ptr<const struct LoraSpec> lora;

    // A pooling request (vLLM's pooling task, engine/pooler.h): its
    // prompt's final hidden rows are pooled, nothing is sampled, and it
    // ends (its KV blocks freed) once the prompt is computed.
    struct Pooling {
        PoolingType type = PoolingType::LAST;
        bool normalize = true;
        int32_t dimensions = 0;
        PooledRows rows;
        // A scoring request (PoolerConfig::score_tokens): no hidden rows,
        // its prompt's last row of logits scored instead.
        std::vector<int32_t> score_tokens;
        // A classification head's request (PoolerConfig::num_labels): its
        // prompt's one row of logits is the head's, activated
        // (classifier_probabilities) instead.
        int32_t classifier_labels = 0;
        ClassifierActivation activation = ClassifierActivation::CLASSIFY;
        // A token_embed request (ALL / STEP): every hidden row kept, in
        // position order, for pool_token_rows at the prompt's end.
        bool per_token = false;
        TokenPooling token;
        std::vector<float> token_rows;
        // Whether it takes a row of logits instead of hidden rows.
        bool reads_logits() const { return !score_tokens.empty() || classifier_labels > 0; }
    };
    std::optional<Pooling> pooling;

    // Masks the last token of every bad word the output is one token short
    // of; whether it masked any.
    bool mask_bad_words(float* logits) const;

    // Whether this step's chunk of the prompt needs its rows' logits.
    bool wants_prompt_rows() const { return sampling.prompt_logprobs >= 0 && !prompt_logprobs_sent; }
};

}  // namespace vllm
