// One engine step, vLLM V1's EngineCore: schedule -> execute (the model
// runner's forward over the mixed prefill/decode batch, then sampling or
// draft verification) -> the scheduler's update_from_output (the one place
// request state advances) -> outputs (text and finishes to the requests'
// streams). Runs on the engine loop thread only; it never calls user code.
#pragma once
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "engine/engine_config.h"
#include "engine/kv_cache_plan.h"
#include "engine/lora_registry.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/stats.h"
#include "kv_cache/kv_cache.h"
#include "kv_transfer/kv_connector.h"
#include "model/decoder_model.h"
#include "sample/sampler.h"
#include "spec_decode/draft_model_proposer.h"
#include "spec_decode/proposer.h"
#include "spec_decode/speculation_policy.h"
#include "structured/grammar_compiler.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace vllm {

class EngineCore {
public:
    // `draft`: the loaded draft model of speculative method draft_model.
    EngineCore(const EngineConfig& config, DecoderModel& model, const Tokenizer& tokenizer, const KvCachePlan& kv_plan,
               int max_model_len, std::optional<DraftModel> draft = std::nullopt);
    // Stops the connector's I/O threads (after its queued saves) first.
    ~EngineCore();

    // Shares computed blocks through `connector` (kv_transfer_config). Its
    // load callback must call wake_for_transfer.
    void attach_connector(std::unique_ptr<kv_transfer::KvConnector> connector);
    // From any thread: a load finished, so a loop idling on transfers steps again.
    void wake_for_transfer() { waiting_for_transfers_ = false; }

    // Grammar masks that take longer than a slice of the loop are computed
    // on `compiler`'s workers, which call `wake` when one is ready.
    void use_grammar_compiler(const structured::GrammarCompiler* compiler, std::function<void()> wake);

    void add(std::unique_ptr<Request> request);
    // enable_lora: the engine's adapters (outliving this core); the
    // scheduler keeps to its max_loras.
    void use_lora(LoraRegistry* registry);
    // Live requests or held-back ends, unless all of them wait for KV
    // transfers or grammar masks; or a mask became ready.
    bool has_work() const {
        if (grammar_progress_) return true;
        return (!requests_.empty() || !finished_.empty()) && !waiting_for_transfers_ && !waiting_for_grammar_;
    }
    // Drops requests whose consumer cancelled them.
    void drop_cancelled();
    // One step; a no-op without work.
    void step();
    // Ends every live request with `error` (the engine is shutting down or
    // a step failed).
    void fail_all(vllm_status status, const std::string& error);

    EngineStats stats() const;
    // KV cache events (core/kv_cache_events.h): from this call on, the
    // blocks entering and leaving the prefix cache are recorded until taken.
    void record_kv_events() { kv_manager_.record_events(&kv_events_); }
    // The events recorded since the last take, oldest first.
    KvCacheEventSink take_kv_events() { return std::exchange(kv_events_, {}); }
    const KVCacheManager& kv_manager() const { return kv_manager_; }
    // The connector's counters, read live (its I/O threads move them between
    // steps); safe from any thread. Unset without a connector.
    std::optional<kv_transfer::KvTransferStats> kv_transfer_stats() const;
    // Sends the terminal events of the requests the last step finished. The
    // loop calls it after publishing stats, so a caller woken by its
    // request's end sees that request in the stats. A kv_producer's request
    // ends once its blocks are written (KvConnector::holds_finish), unless
    // `all`.
    void deliver_finished(bool all = false);

private:
    // What one step hands a request's stream.
    struct StepOutput {
        std::string delta;
        std::vector<int32_t> tokens;
        std::vector<TokenLogprob> logprobs;
        const char* reason = nullptr;  // set when the request finished
        bool jumped = false;           // the last token brought jump-forward tokens
        bool produced = false;         // sampled this step (not a prefill chunk before the prompt's end)
        // Sampling failed: the request ends with this error once the step's update is done.
        bool failed = false;
        vllm_status error_status = VLLM_ERR_RUNTIME;
        std::string error;
        void fail(vllm_status status, std::string message) {
            failed = true;
            error_status = status;
            error = std::move(message);
        }
    };

    // The step's stages, in order (step() reads as this list).
    // Masks the workers finished, KV blocks loaded, drafts proposed.
    void prepare_step();
    // The scheduler's batch; requests whose blocks could not be allocated fail.
    SchedulerOutput schedule();
    // Nothing scheduled: wait for grammar masks or KV transfers, or fail
    // requests that can never fit.
    void idle();
    // The forward, then each request's rows sampled or its drafts verified.
    ModelRunnerOutput execute(const SchedulerOutput& scheduled, std::vector<StepOutput>& outputs);
    // After the update: each request's text, finish or failure to its stream.
    void process_outputs(const SchedulerOutput& scheduled, std::vector<StepOutput>& outputs);

    // Speculative decoding: the draft tokens each running request in decode
    // verifies this step (spec_token_ids), as the dynamic switch allows.
    void propose_drafts();
    // The step's sampling: each scheduled request's rows sampled, or its
    // drafts verified, into `outputs` (the streams' text, one per request)
    // and the model-runner output the scheduler's update takes. Nothing is
    // delivered or finished yet: the update comes first.
    ModelRunnerOutput sample(const SchedulerOutput& scheduled, const std::vector<SequenceSlice>& slices,
                             std::vector<StepOutput>& outputs);
    // A pooling request's chunk: its hidden rows pooled; at the prompt's
    // end the vector goes to its stream and `out` finishes it.
    void pool_rows(Request& r, const float* rows, const SequenceSlice& slice, StepOutput& out);
    // A token_embed request's chunk (Request::Pooling::per_token): its rows
    // kept; at the prompt's end pool_token_rows' answer finishes it.
    void pool_token_chunk(Request& r, const float* rows, const SequenceSlice& slice, StepOutput& out);
    // A scoring request's last row of logits: its score, as a one-element
    // pooled vector, and the request done.
    void score_row(Request& r, const float* logits, StepOutput& out);
    // A pooling request's result (its vector, or a score as one value) to
    // its stream; the request ends with this step.
    void finish_pooling(Request& r, std::vector<float> result, StepOutput& out);
    // Samples the next token of `r` from its logits row into `out`.
    void sample_token(Request& r, float* logits, StepOutput& out);
    // prompt_logprobs: the entries of the prompt positions a chunk's rows
    // predict (each once), handed to the stream when the prompt is done
    // (then true: the update makes it an ordinary request).
    bool record_prompt_logprobs(Request& r, const float* rows, const SequenceSlice& slice);
    // Verifies r's first `num_drafts` draft tokens against its num_drafts + 1
    // logits rows: each row prepared and judged as an ordinary step would
    // be, accepted tokens emitted into `out` until the first rejection
    // (replaced by the target's token) or, all accepted, one more sampled
    // token; `run` says how many were accepted (the update gives up the
    // rejected drafts' K/V slots).
    void verify_drafts(Request& r, float* logits, int num_drafts, StepOutput& out, RequestRunOutput& run);
    // A logits row as the sampler must see it: the min_tokens EOS mask, the
    // grammar mask and the logits processor (the raw row kept for logprobs).
    void prepare_row(Request& r, float* logits);
    // One chosen token into `out`: its logprobs, the grammar, the output and
    // finish checks, jump-forward. False when the request failed (out.failed).
    bool emit(Request& r, int32_t token, StepOutput& out);
    // Hands `out` to r's stream, then finishes r (a finish reason or a
    // failure) or readies its next grammar mask.
    void deliver(Request& r, StepOutput& out);
    // Makes r's next mask ready: computed here within kInlineMaskSlice, or
    // else handed to the compile workers, r waiting (waiting_for_grammar).
    void prepare_grammar(Request& r);
    // Takes up the masks the workers finished: their requests are scheduled
    // again, or end with the error (a budget passed).
    void collect_prepared_grammars();
    // Ends r with its grammar mask's error (a bound or the budget passed).
    void fail_grammar(Request& r, std::exception_ptr error);
    // Appends one generated token: output, detokenized text (into `delta`),
    // finish checks. Returns the finish reason, or nullptr.
    const char* append_token(Request& r, int32_t token, std::string& delta);
    // `completed`: it reached a finish reason (not an error or a cancel).
    void finish(Request& r, bool completed);
    // Takes a request out of the scheduler, the connector and the proposer
    // (the suffix proposer keeps completed outputs).
    void remove(Request& r, bool completed);
    // Queues saves of the blocks the step completed (before `num_computed_tokens` advances).
    void save_completed_blocks(const SchedulerRequest& r, int num_new_tokens);
    // Drops the requests that finished (or failed) from requests_.
    void erase_finished();

    const EngineConfig& config_;
    DecoderModel& model_;
    const Tokenizer& tokenizer_;
    int max_model_len_;
    KVCache kv_cache_;
    KVCacheManager kv_manager_;
    Scheduler scheduler_;
    ThreadPool pool_;
    ModelRunner runner_;
    LoraRegistry* lora_ = nullptr;
    // Per step: the scheduled requests' adapters (held while the forward reads them).
    std::vector<std::shared_ptr<const LoraAdapter>> step_adapters_;
    std::vector<const LoraAdapter*> step_adapter_ptrs_;
    // The step's adapters loaded (on demand, LoraRegistry::acquire); a
    // request whose adapter cannot be loaded again fails alone.
    SchedulerOutput acquire_adapters(SchedulerOutput scheduled);
    Request& request_of(const SchedulerRequest& sched) { return *requests_.at(sched.arrival); }

    std::map<uint64_t, std::unique_ptr<Request>> requests_;  // by arrival (the scheduler request's id)
    struct Finished {
        uint64_t id;
        std::shared_ptr<RequestStream> stream;
        const char* reason;
    };
    std::vector<Finished> finished_;
    Sampler sampler_;  // its scratch is reused request after request
    std::vector<float> raw_logits_;  // a copy of one row, for log-probabilities
    std::unique_ptr<kv_transfer::KvConnector> connector_;
    std::atomic<bool> waiting_for_transfers_{false};
    // The time a request's mask may take on the loop before it is handed
    // off: a normal grammar's new mask takes well under it, so requests
    // rarely miss a step, and a heavy one costs the others at most this.
    static constexpr std::chrono::microseconds kInlineMaskSlice{2000};
    const structured::GrammarCompiler* grammar_compiler_ = nullptr;  // null: masks on the loop
    std::function<void()> wake_for_grammar_;
    bool waiting_for_grammar_ = false;          // the last step found only requests waiting for masks
    std::atomic<bool> grammar_progress_{false};  // a worker finished a mask since the loop last looked
    KvCacheEventSink kv_events_;  // what kv_manager_ records once record_kv_events was called
    EngineStats counters_;  // the cumulative fields; the rest are read live in stats()
    // Speculative decoding (null without speculative_config).
    std::unique_ptr<Proposer> proposer_;
    DraftModelProposer* draft_proposer_ = nullptr;  // proposer_ when it is the draft model's (its KV stats)
    std::unique_ptr<SpeculationPolicy> speculation_policy_;
    std::vector<DraftRequest> draft_requests_;       // per step: the requests propose_drafts drafts for
};

}  // namespace vllm
