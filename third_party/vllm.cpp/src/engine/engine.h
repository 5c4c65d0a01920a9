// The engine: loads the model stack, then runs one engine loop thread that
// batches every live request, whichever thread or entry point submitted it
// (vLLM's AsyncLLM + EngineCore in one process). Callers get a
// RequestStream per request and consume it on their own thread.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_config.h"
#include "engine/engine_core.h"
#include "engine/kv_cache_plan.h"
#include "engine/kv_event_queue.h"
#include "engine/pooler.h"
#include "engine/lora_registry.h"
#include "engine/request_stream.h"
#include "engine/stats.h"
#include "formats/model_source.h"
#include "model/decoder_model.h"
#include "sample/sampling_config.h"
#include "structured/grammar_compiler.h"
#include "structured/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class Engine {
public:
    // Throws Error: MODEL_LOAD for unreadable/corrupt/unsupported model
    // files, INVALID_ARGUMENT for options that do not fit the model.
    explicit Engine(const EngineConfig& config);
    // Stops the loop; requests still inside end with a RUNTIME error.
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Validates and enqueues; returns at once. INVALID_ARGUMENT for a prompt
    // that is not UTF-8, empty, or longer than max_model_len.
    std::shared_ptr<RequestStream> submit(const std::string& prompt, SamplingConfig sampling, int32_t priority);
    // The same for a prompt already tokenized (chat renders and encodes its own).
    std::shared_ptr<RequestStream> submit_tokens(std::vector<int32_t> prompt_ids, SamplingConfig sampling,
                                                 int32_t priority);

    // A pooling request (vLLM's embed task): the prompt's final hidden rows
    // pooled as the engine's pooler config says, with `params`' normalisation
    // and dimensions; the prompt cut to its last truncate_prompt_tokens
    // tokens first (0: not cut). INVALID_ARGUMENT naming the field, or
    // naming runner pooling when this engine serves generation only.
    std::shared_ptr<RequestStream> submit_pooling(std::vector<int32_t> prompt_ids, const PoolingParams& params,
                                                  int32_t truncate_prompt_tokens, int32_t priority);
    // A scoring request (vLLM's score task on a score head,
    // PoolerConfig::score_tokens): the prompt's last row of logits scored,
    // the score as a one-element pooled vector. INVALID_ARGUMENT naming what
    // to load when the engine has no score head.
    // On a cross-encoder (a one-label classification head) the score is
    // the head's sigmoid; second_segment_start: where a sentence pair's
    // second segment starts (its token type 1), 0: one segment.
    std::shared_ptr<RequestStream> submit_score(std::vector<int32_t> prompt_ids, int32_t truncate_prompt_tokens,
                                                int32_t priority, int32_t second_segment_start = 0);
    bool serves_score() const { return !pooler_.score_tokens.empty() || pooler_.num_labels == 1; }
    // A classification request (vLLM's classify task, PoolerConfig::num_labels):
    // the head's probabilities of each label as the pooled vector
    // (classifier_probabilities). INVALID_ARGUMENT naming the task when the
    // model has no classification head.
    std::shared_ptr<RequestStream> submit_classify(std::vector<int32_t> prompt_ids, int32_t truncate_prompt_tokens,
                                                   int32_t priority);
    bool serves_classify() const { return pooler_.num_labels > 0; }
    // A token_embed request (vLLM's ALL / STEP token pooling,
    // PoolerConfig::token): every kept prompt row, each `params`'
    // dimensions and normalisation, as one flattened vector of
    // token_row_width() wide rows. Refused as submit_pooling refuses.
    std::shared_ptr<RequestStream> submit_token_pooling(std::vector<int32_t> prompt_ids, const PoolingParams& params,
                                                        int32_t truncate_prompt_tokens, int32_t priority);
    // submit_pooling's checks of what is the same for every input: that
    // this engine pools, and `params`' dimensions.
    void check_pooling_request(const PoolingParams& params) const;
    // Which request kinds this engine serves (its runner, resolved at load).
    bool serves_generation() const { return serves_generation_; }
    bool serves_pooling() const { return serves_pooling_; }
    const PoolerConfig& pooler_config() const { return pooler_; }
    // The length of a pooled vector before `dimensions` (the hidden size).
    int embedding_size() const;

    // Compiles structured-output constraints within the engine's budget
    // (SamplingConfig::from_c and chat take it); thread-safe.
    const structured::GrammarCompiler& grammar_compiler() const { return *grammar_compiler_; }

    EngineStats stats() const;
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    // The chat template ("" when there is none): the chat_template option
    // when given, else a GGUF file's `tokenizer.chat_template` metadata or a
    // Hugging Face directory's as HfTokenizerConfig chooses it.
    const std::string& chat_template() const { return chat_template_; }
    // The model's name for responses: the file or directory name, without its parents.
    const std::string& model_name() const { return model_name_; }
    int max_model_len() const { return max_model_len_; }
    // LoRA adapters (enable_lora; else INVALID_ARGUMENT saying so): register
    // one (loaded and checked now, LoraRegistry::add), remove one, list them.
    void add_lora(int32_t id, const std::string& name, const std::string& path);
    void remove_lora(int32_t id);
    std::vector<LoraSpec> list_loras() const;

    // KV cache events (vllm_engine_kv_events_enable / _take): from the
    // loop's next step on, the prefix cache's stored and evicted blocks are
    // queued for take_kv_events_json (KvEventQueue's format). INVALID_ARGUMENT
    // when prefix caching is off (no block would ever be cached). Idempotent.
    void enable_kv_events();
    std::string take_kv_events_json(int timeout_ms) { return kv_events_.take_json(timeout_ms); }

private:
    // speculative_config's draft model, checked against the target (its
    // vocabulary, its context length).
    DraftModel load_draft_model() const;
    // The kv_transfer_config's connector, keyed by this model's fingerprint.
    void attach_kv_connector(const KvCachePlan& kv_plan);
    // qwen35/qwen35moe: prefix caching, speculative decoding and KV transfer
    // refused by name (prefix caching left off when not asked for).
    void refuse_for_recurrent_state(const ModelConfig& model);
    // The runner and pooler config from the options over the model's own
    // choice (GGUF `<arch>.pooling_type`).
    void resolve_runner(const ModelConfig& model);
    // submit_pooling's and submit_score's common road: truncation, the
    // prompt checks, the request queued.
    std::shared_ptr<RequestStream> enqueue_pooling(std::vector<int32_t> prompt_ids, Request::Pooling pooling,
                                                   int32_t truncate_prompt_tokens, int32_t priority,
                                                   int32_t second_segment_start = 0);
    // An encoder's classification head (cls.output), read into pooler_ once the model is built.
    void resolve_classifier(const ModelConfig& model);
    void loop();
    LoraRegistry& lora_registry() const;  // INVALID_ARGUMENT without enable_lora

    EngineConfig config_;
    std::unique_ptr<ModelSource> source_;  // the weights point into it
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<DecoderModel> model_;
    std::unique_ptr<LoraRegistry> lora_;  // enable_lora
    std::shared_ptr<const structured::Vocabulary> vocabulary_;  // for structured-output masks
    // Its workers call back into the loop (a mask is ready): stopped before core_ goes.
    std::unique_ptr<structured::GrammarCompiler> grammar_compiler_;
    std::unique_ptr<EngineCore> core_;  // touched by the loop thread only
    int max_model_len_ = 0;
    std::string chat_template_;
    std::string model_name_;
    bool serves_generation_ = true;
    bool serves_pooling_ = false;
    bool encoder_ = false;  // the model is an encoder (ArchitectureTraits::encoder): pooling requests run whole
    PoolerConfig pooler_;

    // Hand-over between submitting threads and the loop.
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::unique_ptr<Request>> incoming_;
    uint64_t next_arrival_ = 0;
    bool stopping_ = false;
    EngineStats published_stats_;
    // Set by enable_kv_events; the loop attaches the recorder (its own
    // state) before its next step and hands every step's events over.
    std::atomic<bool> kv_events_wanted_{false};
    bool kv_events_on_ = false;  // loop thread only
    KvEventQueue kv_events_;
    std::thread loop_thread_;
};

}  // namespace vllm
