#include "engine/engine.h"

#include <algorithm>
#include <cmath>

#include "engine/context_length.h"
#include "engine/kv_cache_plan.h"
#include "engine/model_files.h"
#include "engine/output_processor.h"
#include "kernels/cpu/kernels.h"
#include "model/model_registry.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm {

namespace {
// Threads that compile constraints and compute the masks the loop hands
// off: two, so one long compile does not hold up every other request's
// grammar work, yet a flood of compiles takes at most two cores.
constexpr int kGrammarWorkers = 2;
}  // namespace

Engine::Engine(const EngineConfig& config) : config_(config) {
    // Before any weight is laid out for the kernels.
    if (!config.isa.empty()) kernels::require_isa(config.isa);
    ModelFiles files = ModelFiles::open(config.model_path, config.tokenizer_config_path, config.num_threads);
    source_ = std::move(files.source);
    tokenizer_ = std::move(files.tokenizer);
    chat_template_ = config.chat_template ? *config.chat_template : std::move(files.chat_template);
    ModelConfig model_config = std::move(files.config);
    vocabulary_ = std::make_shared<structured::Vocabulary>(*tokenizer_);
    // The last path component; a directory may be given with a trailing '/'.
    const std::string path = config.model_path.substr(0, config.model_path.find_last_not_of('/') + 1);
    model_name_ = path.substr(path.find_last_of('/') + 1);

    max_model_len_ = config.max_model_len > 0 ? config.max_model_len : model_config.context_length;
    if (max_model_len_ > model_config.context_length)
        throw_invalid_argument("max_model_len " + std::to_string(max_model_len_) + " exceeds the model's context length " +
                               std::to_string(model_config.context_length));

    refuse_for_recurrent_state(model_config);
    resolve_runner(model_config);
    std::optional<DraftModel> draft;
    if (config.speculative && config.speculative->method == SpeculativeMethod::DRAFT_MODEL) draft = load_draft_model();
    KvCachePlan kv_plan =
        plan_kv_cache(model_config, config, max_model_len_, draft ? &draft->model->config() : nullptr);
    model_ = build_decoder(std::move(model_config), std::move(files.weights), max_model_len_);
    if (encoder_) resolve_classifier(model_->config());
    core_ = std::make_unique<EngineCore>(config_, *model_, *tokenizer_, kv_plan, max_model_len_, std::move(draft));
    grammar_compiler_ =
        std::make_unique<structured::GrammarCompiler>(vocabulary_, config_.compile_budget, kGrammarWorkers);
    core_->use_grammar_compiler(grammar_compiler_.get(), [this] {
        std::lock_guard<std::mutex> lock(mutex_);  // no lost wake-up: the loop checks under it
        wake_.notify_all();
    });
    if (config_.kv_transfer) attach_kv_connector(kv_plan);
    if (config_.enable_lora) {
        if (config_.kv_transfer)
            throw_invalid_argument("enable_lora with a kv_transfer_config is not supported (the connector's block "
                                   "hashes do not carry the adapter)");
        lora_ = std::make_unique<LoraRegistry>(*model_, config_.max_loras, config_.max_lora_rank);
        core_->use_lora(lora_.get());
    }
    published_stats_ = core_->stats();
    loop_thread_ = std::thread([this] { loop(); });
}

void Engine::refuse_for_recurrent_state(const ModelConfig& model) {
    if (!model.has_recurrent_layers()) return;
    // A linear-attention layer's state after position p cannot be rebuilt
    // from the KV blocks of [0, p): it is one running state per request,
    // with no snapshots kept at block boundaries. So nothing may resume a
    // request from a cached prefix or roll it back past rejected drafts.
    const std::string why = "'s linear-attention (Gated DeltaNet) layers carry one recurrent state per request, "
                            "without per-block snapshots";
    if (config_.prefix_caching_requested)
        throw_invalid_argument("enable_prefix_caching: not supported for " + model.architecture + " models (" +
                               model.architecture + why + " to resume a cached prefix from); leave it unset");
    config_.prefix_caching = false;
    if (config_.speculative)
        throw_invalid_argument("speculative_config: not supported for " + model.architecture + " models (" +
                               model.architecture + why + " or per-position rollback of rejected drafts)");
    if (config_.kv_transfer)
        throw_invalid_argument("kv_transfer_config: not supported for " + model.architecture + " models (" +
                               model.architecture + why + "; transferred KV blocks cannot restore it)");
}

void Engine::resolve_runner(const ModelConfig& model) {
    // The model's own pooling: what llama.cpp's converter writes from
    // sentence-transformers' Pooling module (an embedding model).
    const std::optional<PoolingType> own =
        pooling_type_from_gguf(source_->get_int(model.architecture + ".pooling_type", 0));
    std::string runner = config_.runner;
    if (runner == "auto")
        runner = (own || config_.convert == "embed" || !config_.classifier_from_token.empty()) ? "pooling" : "generate";
    if (model.traits.encoder) {
        // An encoder has no output head: pooling only, each prompt run whole
        // (core/scheduler_request.h's whole_prompt), so the step budget
        // holds the longest prompt the engine admits.
        if (config_.runner != "auto" && config_.runner != "pooling")
            throw_invalid_argument("runner '" + config_.runner + "': " + model.architecture +
                                   " is an encoder (embeddings only, no text generation); load it with runner 'pooling' "
                                   "or 'auto'");
        // The yes/no score head reads logits, which an encoder does not make.
        if (!config_.classifier_from_token.empty())
            throw_invalid_argument("hf_overrides.classifier_from_token: " + model.architecture +
                                   " is an encoder without an output head (cross-encoder score heads are not "
                                   "supported yet; score with its embeddings' cosine similarity instead)");
        runner = "pooling";
        config_.max_num_batched_tokens = std::max(config_.max_num_batched_tokens, max_model_len_);
        encoder_ = true;
    }
    serves_generation_ = runner == "generate" || runner == "both";
    serves_pooling_ = runner == "pooling" || runner == "both";
    // vLLM's defaults for an embedding model: the model's pooling, else
    // LAST (a decoder converted with --convert embed); normalised.
    pooler_.type = own.value_or(PoolingType::LAST);
    if (config_.pooling_type) pooler_.type = parse_pooling_type(*config_.pooling_type, "pooler_config.pooling_type");
    // A sentence-transformers directory says whether it normalises
    // (formats/sentence_transformers.h); elsewhere vLLM's default, true.
    pooler_.normalize = source_->get_bool("vllm.pooling_normalize", true);
    if (config_.pooling_normalize) pooler_.normalize = *config_.pooling_normalize;
    pooler_.matryoshka = source_->get_bool("vllm.is_matryoshka", false);
    for (int64_t d : source_->get_int_array("vllm.matryoshka_dimensions"))
        pooler_.matryoshka_dimensions.push_back(static_cast<int32_t>(d));
    if (config_.is_matryoshka) pooler_.matryoshka = *config_.is_matryoshka;
    if (!config_.matryoshka_dimensions.empty()) pooler_.matryoshka_dimensions = config_.matryoshka_dimensions;
    if (!pooler_.matryoshka_dimensions.empty()) pooler_.matryoshka = true;
    // The score head: each classifier token text must be one token of this
    // vocabulary (vLLM's convert_tokens_to_ids).
    for (const std::string& text : config_.classifier_from_token) {
        const std::vector<int32_t> ids = tokenizer_->encode(text, /*add_special=*/false, /*parse_special=*/true);
        if (ids.size() != 1)
            throw_invalid_argument("'hf_overrides.classifier_from_token' \"" + text + "\" is " +
                                   std::to_string(ids.size()) + " tokens in model \"" + model_name_ +
                                   "\"'s vocabulary, not one");
        pooler_.score_tokens.push_back(ids[0]);
    }
    pooler_.qwen3_reranker_prompt = config_.is_original_qwen3_reranker;
    if (config_.tok_pooling_type) pooler_.token.step = parse_step_pooling(*config_.tok_pooling_type, "pooler_config.tok_pooling_type");
    if ((config_.step_tag_id || !config_.returned_token_ids.empty()) && !pooler_.token.step)
        throw_invalid_argument("pooler_config's step_tag_id and returned_token_ids need tok_pooling_type STEP");
    pooler_.token.step_tag_id = config_.step_tag_id.value_or(-1);
    pooler_.token.returned_token_ids = config_.returned_token_ids;
    for (int32_t column : pooler_.token.returned_token_ids)
        if (column >= model.dim)
            throw_invalid_argument("'pooler_config.returned_token_ids' " + std::to_string(column) +
                                   " is not a column of the model's " + std::to_string(model.dim) + "-wide rows");
    if (serves_score() && !serves_pooling_)
        throw_invalid_argument("hf_overrides' classifier_from_token makes a scoring model: it needs runner pooling "
                               "(or auto), not " + config_.runner);
}

void Engine::resolve_classifier(const ModelConfig& model) {
    pooler_.num_labels = static_cast<int32_t>(model_->logit_count());
    if (pooler_.num_labels == 0) return;
    // llama.cpp's converter writes id2label's names (none for a bare LABEL_0, LABEL_1).
    pooler_.labels = source_->get_string_array(model.architecture + ".classifier.output_labels");
    // vLLM's activations from config.json (the HF loader's vllm.* keys; a GGUF has none).
    const std::string problem = source_->get_string("vllm.classifier_problem_type", "");
    if (problem == "regression") pooler_.classify_activation = ClassifierActivation::IDENTITY;
    if (problem == "multi_label_classification") pooler_.classify_activation = ClassifierActivation::SIGMOID;
    const std::string score = source_->get_string("vllm.score_activation", "");
    if (!score.empty()) pooler_.score_activation = parse_score_activation(score, "config.json's cross-encoder activation_fn");
    if (pooler_.labels.size() != static_cast<size_t>(pooler_.num_labels)) {
        pooler_.labels.clear();
        for (int i = 0; i < pooler_.num_labels; ++i) pooler_.labels.push_back("LABEL_" + std::to_string(i));
    }
}

int Engine::embedding_size() const { return model_->config().dim; }

void Engine::check_pooling_request(const PoolingParams& params) const {
    if (!serves_pooling_)
        throw_invalid_argument("this engine serves text generation only: model \"" + model_name_ +
                               "\" was loaded with runner generate; load it with runner 'pooling' (vLLM's --runner "
                               "pooling, or --convert embed) to embed");
    check_pooling_dimensions(pooler_, embedding_size(), params.dimensions, model_name_);
}

std::shared_ptr<RequestStream> Engine::submit_pooling(std::vector<int32_t> prompt_ids, const PoolingParams& params,
                                                      int32_t truncate_prompt_tokens, int32_t priority) {
    check_pooling_request(params);
    if (serves_score() && pooler_.num_labels == 0)
        throw_invalid_argument("model \"" + model_name_ +
                               "\" has a score head (hf_overrides classifier_from_token): it scores (/score, "
                               "/rerank), it does not embed; load it without the score head to embed");
    if (serves_classify())
        throw_invalid_argument("model \"" + model_name_ + "\" has a classification head (" +
                               std::to_string(pooler_.num_labels) +
                               " labels): it classifies (/classify) and, with one label, scores (/score, /rerank); "
                               "it does not embed");
    Request::Pooling pooling;
    pooling.type = pooler_.type;
    pooling.normalize = params.normalize.value_or(pooler_.normalize);
    pooling.dimensions = params.dimensions;
    return enqueue_pooling(std::move(prompt_ids), std::move(pooling), truncate_prompt_tokens, priority);
}

std::shared_ptr<RequestStream> Engine::submit_token_pooling(std::vector<int32_t> prompt_ids, const PoolingParams& params,
                                                            int32_t truncate_prompt_tokens, int32_t priority) {
    check_pooling_request(params);
    if (serves_score() || serves_classify())
        throw_invalid_argument("model \"" + model_name_ + "\" has a " + (serves_classify() ? "classification" : "score") +
                               " head: it does not embed tokens (token_embed); use its classify or score task");
    Request::Pooling pooling;
    pooling.per_token = true;
    pooling.token = pooler_.token;
    pooling.normalize = params.normalize.value_or(pooler_.normalize);
    pooling.dimensions = params.dimensions;
    return enqueue_pooling(std::move(prompt_ids), std::move(pooling), truncate_prompt_tokens, priority);
}

std::shared_ptr<RequestStream> Engine::submit_score(std::vector<int32_t> prompt_ids, int32_t truncate_prompt_tokens,
                                                    int32_t priority, int32_t second_segment_start) {
    if (!serves_score())
        throw_invalid_argument("model \"" + model_name_ +
                               "\" has no score head; load it with runner pooling and hf_overrides' "
                               "classifier_from_token (Qwen3-Reranker: [\"no\", \"yes\"]) to score" +
                               (serves_classify() ? " (its classification head has " + std::to_string(pooler_.num_labels) +
                                                        " labels; a score needs one: use /classify)"
                                                  : std::string()));
    if (pooler_.num_labels == 1) {
        Request::Pooling pooling;
        pooling.classifier_labels = 1;
        pooling.activation = pooler_.score_activation;
        return enqueue_pooling(std::move(prompt_ids), std::move(pooling), truncate_prompt_tokens, priority,
                               second_segment_start);
    }
    Request::Pooling pooling;
    pooling.type = PoolingType::LAST;
    pooling.score_tokens = pooler_.score_tokens;
    return enqueue_pooling(std::move(prompt_ids), std::move(pooling), truncate_prompt_tokens, priority);
}

std::shared_ptr<RequestStream> Engine::submit_classify(std::vector<int32_t> prompt_ids, int32_t truncate_prompt_tokens,
                                                       int32_t priority) {
    if (!serves_classify())
        throw_invalid_argument("model \"" + model_name_ +
                               "\" cannot classify: it has no classification head (vLLM's classify task needs a "
                               "*ForSequenceClassification model such as a BERT or XLM-RoBERTa classifier)");
    Request::Pooling pooling;
    pooling.classifier_labels = pooler_.num_labels;
    pooling.activation = pooler_.classify_activation;
    return enqueue_pooling(std::move(prompt_ids), std::move(pooling), truncate_prompt_tokens, priority);
}

std::shared_ptr<RequestStream> Engine::enqueue_pooling(std::vector<int32_t> prompt_ids, Request::Pooling pooling,
                                                       int32_t truncate_prompt_tokens, int32_t priority,
                                                       int32_t second_segment_start) {
    if (truncate_prompt_tokens > 0 && prompt_ids.size() > static_cast<size_t>(truncate_prompt_tokens)) {
        // Cut from the front: the second segment starts that much earlier (or is all that is left).
        const int32_t cut = static_cast<int32_t>(prompt_ids.size()) - truncate_prompt_tokens;
        prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - truncate_prompt_tokens);
        if (second_segment_start > 0) second_segment_start = std::max(second_segment_start - cut, 0);
    }
    check_prompt_ids(prompt_ids, tokenizer_->vocab_size(), max_model_len_);
    auto stream = std::make_shared<RequestStream>();
    SamplingConfig sampling;
    sampling.max_tokens = 1;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) throw_runtime("the engine is shutting down");
        auto request = std::make_unique<Request>(next_arrival_++, priority, std::move(prompt_ids), std::move(sampling),
                                                 *tokenizer_, stream);
        // Every row counts for CLS and MEAN: no prefix-cache hit may skip
        // one (LAST and scoring read the last row, which a hit always recomputes).
        // An encoder's rows all depend on the whole prompt: computed whole, in one step.
        request->sched.reads_prefix_cache = pooling.type == PoolingType::LAST && !encoder_ && !pooling.per_token;
        request->sched.whole_prompt = encoder_;
        request->sched.second_segment_start = second_segment_start;
        request->pooling.emplace(std::move(pooling));
        incoming_.push_back(std::move(request));
    }
    wake_.notify_one();
    return stream;
}

void Engine::attach_kv_connector(const KvCachePlan& kv_plan) {
    const ModelConfig& mc = model_->config();
    kv_transfer::KvGeometry geometry;
    geometry.n_layers = mc.n_layers;
    geometry.n_kv_heads = mc.n_kv_heads;
    geometry.head_dim = mc.head_dim;
    geometry.block_size = config_.block_size;
    geometry.dtype = config_.kv_dtype;
    if (!mc.layer_kv_shapes.empty()) geometry.layer_shapes = mc.layer_kv_shapes;
    geometry.layer_windows.assign(mc.n_layers, 0);
    for (const KVCacheGroupSpec& group : kv_plan.groups)
        for (int layer : group.layers) geometry.layer_windows[layer] = group.sliding_window;
    const kv_transfer::ModelFingerprint fingerprint = kv_transfer::fingerprint_model(*source_, geometry);
    core_->attach_connector(std::make_unique<kv_transfer::KvConnector>(*config_.kv_transfer, fingerprint, geometry, [this] {
        core_->wake_for_transfer();
        std::lock_guard<std::mutex> lock(mutex_);  // no lost wake-up: the loop checks under it
        wake_.notify_all();
    }));
}

DraftModel Engine::load_draft_model() const {
    const std::string& path = config_.speculative->model;
    ModelFiles files = ModelFiles::open(path, "", config_.num_threads);
    check_draft_vocabulary(*tokenizer_, *files.tokenizer, path);
    if (files.config.context_length < max_model_len_)
        throw_invalid_argument("speculative_config: 'model' ('" + path + "') has a context length of " +
                               std::to_string(files.config.context_length) + ", shorter than max_model_len " +
                               std::to_string(max_model_len_));
    DraftModel draft;
    draft.source = std::move(files.source);
    draft.model = build_decoder(std::move(files.config), std::move(files.weights), max_model_len_);
    if (config_.speculative->draft_vocab_size > 0) draft.model->limit_logits(config_.speculative->draft_vocab_size);
    return draft;
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    loop_thread_.join();
    kv_events_.close();
    grammar_compiler_.reset();  // its work stopped: no mask calls back into core_ any more
    for (auto& r : incoming_) r->stream->finish(nullptr, VLLM_ERR_RUNTIME, "the engine was shut down");
    core_->fail_all(VLLM_ERR_RUNTIME, "the engine was shut down");
    // Now, while the mutex its connector's wake-up takes still exists (the
    // connector writes its queued saves first).
    core_.reset();
}

std::shared_ptr<RequestStream> Engine::submit(const std::string& prompt, SamplingConfig sampling, int32_t priority) {
    if (!utf8::is_valid(prompt)) throw_invalid_argument("prompt is not valid UTF-8");
    return submit_tokens(tokenizer_->encode(prompt, /*add_special=*/true, /*parse_special=*/true), std::move(sampling),
                         priority);
}

std::shared_ptr<RequestStream> Engine::submit_tokens(std::vector<int32_t> prompt_ids, SamplingConfig sampling,
                                                     int32_t priority) {
    if (!serves_generation_)
        throw_invalid_argument("this engine serves embeddings only: model \"" + model_name_ +
                               "\" was loaded with runner pooling; use the embeddings API (/v1/embeddings, "
                               "vllm_embed, Engine.embed)" +
                               (encoder_ ? std::string(" (") + model_->config().architecture +
                                               " is an encoder: it has no text generation)"
                                         : std::string(", or load it with runner 'generate' to generate text")));
    sampling.truncate_prompt(prompt_ids);
    check_prompt_ids(prompt_ids, tokenizer_->vocab_size(), max_model_len_);
    sampling.check_vocabulary(tokenizer_->vocab_size());
    auto stream = std::make_shared<RequestStream>();
    std::shared_ptr<const LoraSpec> lora;
    if (sampling.lora_int_id != 0) {
        if (!lora_)
            throw_invalid_argument("lora_int_id " + std::to_string(sampling.lora_int_id) +
                                   ": LoRA is not enabled on this engine (load it with enable_lora)");
        lora = lora_->find(sampling.lora_int_id);
    }
    std::shared_ptr<structured::GrammarMatcher> matcher;
    if (sampling.grammar) matcher = std::make_shared<structured::GrammarMatcher>(sampling.grammar, vocabulary_);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) throw_runtime("the engine is shutting down");
        incoming_.push_back(std::make_unique<Request>(next_arrival_++, priority, std::move(prompt_ids),
                                                      std::move(sampling), *tokenizer_, stream));
        incoming_.back()->matcher = std::move(matcher);
        if (lora) incoming_.back()->sched.adapter_key = lora->key;
        incoming_.back()->lora = std::move(lora);
    }
    wake_.notify_one();
    return stream;
}

void Engine::enable_kv_events() {
    if (!config_.prefix_caching)
        throw_invalid_argument("KV cache events need prefix caching (they report the blocks the prefix cache "
                               "stores and evicts), which is off for this engine; leave enable_prefix_caching on");
    kv_events_wanted_ = true;
}

LoraRegistry& Engine::lora_registry() const {
    if (!lora_) throw_invalid_argument("LoRA is not enabled on this engine (load it with enable_lora)");
    return *lora_;
}

void Engine::add_lora(int32_t id, const std::string& name, const std::string& path) {
    lora_registry().add(id, name, path);
}

void Engine::remove_lora(int32_t id) { lora_registry().remove(id); }

std::vector<LoraSpec> Engine::list_loras() const { return lora_registry().list(); }

EngineStats Engine::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    EngineStats s = published_stats_;
    s.waiting_requests += static_cast<int64_t>(incoming_.size());
    s.kv_transfer = core_->kv_transfer_stats();  // set before the loop started: no race
    if (serves_generation_) s.supported_tasks.push_back("generate");
    if (serves_pooling_ && !serves_classify()) s.supported_tasks.push_back(serves_score() ? "score" : "embed");
    // A classification head: vLLM's classify, and score for one label.
    if (serves_classify()) s.supported_tasks.push_back("classify");
    if (serves_classify() && serves_score()) s.supported_tasks.push_back("score");
    if (lora_ && s.lora) lora_->fill_stats(*s.lora);  // registrations since the last step count now
    return s;
}

void Engine::loop() {
    for (;;) {
        std::vector<std::unique_ptr<Request>> arrived;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !incoming_.empty() || core_->has_work(); });
            if (stopping_) return;
            arrived.swap(incoming_);
            // Until this step's snapshot, the arrivals are in neither
            // incoming_ nor the published stats: count them as waiting, so
            // a submitted request is never missing from stats() (a poll for
            // an idle engine would otherwise end while its first step runs).
            published_stats_.waiting_requests += static_cast<int64_t>(arrived.size());
        }
        if (kv_events_wanted_ && !kv_events_on_) {
            core_->record_kv_events();
            kv_events_on_ = true;
        }
        for (auto& r : arrived) core_->add(std::move(r));
        core_->drop_cancelled();
        try {
            core_->step();
        } catch (const std::exception& e) {
            // A failed step leaves the batch's KV state unknown: end every
            // live request with the error; the engine itself stays usable.
            core_->fail_all(VLLM_ERR_RUNTIME, std::string("engine step failed: ") + e.what());
        }
        if (kv_events_on_) kv_events_.push(core_->take_kv_events());
        EngineStats snapshot = core_->stats();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            published_stats_ = snapshot;
        }
        core_->deliver_finished();
    }
}

}  // namespace vllm
