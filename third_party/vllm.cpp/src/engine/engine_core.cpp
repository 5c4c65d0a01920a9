#include "engine/engine_core.h"

#include <set>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kernels/cpu/kernels.h"
#include "model/expert_preparation.h"
#include "sample/rejection_sampler.h"
#include "util/error.h"

namespace vllm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

EngineCore::EngineCore(const EngineConfig& config, DecoderModel& model, const Tokenizer& tokenizer,
                       const KvCachePlan& kv_plan, int max_model_len, std::optional<DraftModel> draft)
    : config_(config),
      model_(model),
      tokenizer_(tokenizer),
      max_model_len_(max_model_len),
      kv_cache_(kv_plan.groups, kv_plan.group_blocks, model.config().kv_shapes(), config.block_size, config.kv_dtype),
      kv_manager_(kv_plan.groups, kv_plan.group_blocks, config.block_size, config.prefix_caching),
      scheduler_(parse_scheduling_policy(config.scheduling_policy), config.max_num_seqs,
                 config.max_num_batched_tokens, kv_manager_),
      pool_(config.num_threads),
      runner_(model, kv_cache_, kv_manager_, pool_) {
    if (config.speculative) {
        if (draft) {
            auto proposer = std::make_unique<DraftModelProposer>(std::move(*draft), kv_plan.draft_blocks,
                                                                 config.block_size, config.kv_dtype,
                                                                 config.speculative->draft_confidence_threshold, pool_);
            draft_proposer_ = proposer.get();
            proposer_ = std::move(proposer);
        } else {
            proposer_ = make_proposer(*config.speculative);
        }
        speculation_policy_ = std::make_unique<SpeculationPolicy>(*config.speculative);
        counters_.spec_decode.emplace();
        counters_.spec_decode->method = method_name(config.speculative->method);
        counters_.spec_decode->num_accepted_tokens_per_pos.assign(config.speculative->num_speculative_tokens, 0);
    }
}

EngineCore::~EngineCore() { connector_.reset(); }

void EngineCore::attach_connector(std::unique_ptr<kv_transfer::KvConnector> connector) {
    connector_ = std::move(connector);
    scheduler_.set_load_gate(connector_.get());
}

void EngineCore::use_vision(VisionTower* tower, size_t cache_floats, int64_t encoder_budget) {
    encoder_ = std::make_unique<EncoderStage>(*tower, cache_floats);
    scheduler_.set_encoder_budget(encoder_budget);
    runner_.set_encoder_rows([this](const SchedulerRequest& sched, size_t input) -> const float* {
        const ImageInput& image = request_of(sched).images.at(input);
        return image.rows ? image.rows->data() : nullptr;
    });
}

SchedulerOutput EngineCore::encode_images(SchedulerOutput scheduled) {
    std::vector<ScheduledRequest> kept;
    kept.reserve(scheduled.size());
    for (const ScheduledRequest& s : scheduled) {
        Request& r = request_of(*s.request);
        if (r.images.empty()) {
            kept.push_back(s);
            continue;
        }
        try {
            if (!encoder_) throw_invalid_argument("this model has no vision tower: it takes no images");
            encoder_->prepare(s, r, pool_);
            kept.push_back(s);
        } catch (const Error& e) {
            remove(r, false);
            r.stream->finish(nullptr, e.status(), e.what());
        } catch (const std::exception& e) {
            remove(r, false);
            r.stream->finish(nullptr, VLLM_ERR_RUNTIME, std::string("image encoding failed: ") + e.what());
        }
    }
    scheduled.scheduled = std::move(kept);
    return scheduled;
}

void EngineCore::use_lora(LoraRegistry* registry) {
    lora_ = registry;
    scheduler_.set_max_loras(registry->max_loras());
}

SchedulerOutput EngineCore::acquire_adapters(SchedulerOutput scheduled) {
    step_adapters_.clear();
    step_adapter_ptrs_.clear();
    std::set<uint64_t> in_use;
    for (const ScheduledRequest& s : scheduled)
        if (s.request->adapter_key != 0) in_use.insert(s.request->adapter_key);
    SchedulerOutput kept;
    for (const ScheduledRequest& s : scheduled) {
        Request& r = request_of(*s.request);
        std::shared_ptr<const LoraAdapter> adapter;
        if (r.lora) try {
                adapter = lora_->acquire(r.lora, in_use);
            } catch (const Error& e) {
                remove(r, false);
                r.stream->finish(nullptr, e.status(), e.what());
                continue;
            }
        step_adapter_ptrs_.push_back(adapter.get());
        step_adapters_.push_back(std::move(adapter));
        kept.scheduled.push_back(s);
    }
    return kept;
}

void EngineCore::use_grammar_compiler(const structured::GrammarCompiler* compiler, std::function<void()> wake) {
    grammar_compiler_ = compiler;
    wake_for_grammar_ = std::move(wake);
}

void EngineCore::add(std::unique_ptr<Request> request) {
    counters_.prompt_tokens += request->num_prompt_tokens();
    request->stream->set_prompt_tokens(request->num_prompt_tokens());
    scheduler_.add(&request->sched);
    const uint64_t id = request->sched.arrival;
    Request& r = *requests_.emplace(id, std::move(request)).first->second;
    try {
        prepare_grammar(r);
    } catch (...) {  // its first mask refused (a bound); the step erases it
        fail_grammar(r, std::current_exception());
    }
}

void EngineCore::prepare_grammar(Request& r) {
    if (!r.constrained() || grammar_compiler_ == nullptr || r.matcher->mask_ready()) return;
    if (structured::GrammarCompiler::prepare_mask_within(*r.matcher, kInlineMaskSlice)) return;
    auto prep = std::make_shared<Request::GrammarPrep>();
    r.grammar_prep = prep;
    r.sched.waiting_for_grammar = true;
    // The worker holds the matcher and prep: a request cancelled meanwhile
    // may be gone when it finishes. The engine stops the workers before
    // this core goes.
    grammar_compiler_->prepare_mask(r.matcher, [this, prep](std::exception_ptr error) {
        prep->error = error;
        prep->done.store(true, std::memory_order_release);
        grammar_progress_.store(true);
        wake_for_grammar_();
    });
}

void EngineCore::collect_prepared_grammars() {
    if (!grammar_progress_.exchange(false)) return;
    for (auto& [id, request] : requests_) {
        Request& r = *request;
        if (!r.grammar_prep || !r.grammar_prep->done.load(std::memory_order_acquire)) continue;
        const std::exception_ptr error = r.grammar_prep->error;
        r.grammar_prep.reset();
        r.sched.waiting_for_grammar = false;
        if (error) fail_grammar(r, error);
    }
}

void EngineCore::fail_grammar(Request& r, std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        r.stream->finish(nullptr, e.status(), e.what());
    } catch (const std::bad_alloc&) {
        r.stream->finish(nullptr, VLLM_ERR_RUNTIME, "out of memory computing the structured-output mask");
    } catch (const std::exception& e) {
        r.stream->finish(nullptr, VLLM_ERR_RUNTIME, std::string("structured output: ") + e.what());
    }
    finish(r, false);
}

void EngineCore::drop_cancelled() {
    for (auto it = requests_.begin(); it != requests_.end();) {
        Request& r = *it->second;
        if (!r.stream->cancel_requested()) {
            ++it;
            continue;
        }
        remove(r, false);
        r.stream->mark_aborted();
        ++counters_.requests_aborted;
        it = requests_.erase(it);
    }
}

void EngineCore::propose_drafts() {
    if (!proposer_) return;
    const bool allowed = speculation_policy_->step_allowed(scheduler_.num_running() + scheduler_.num_waiting());
    draft_requests_.clear();
    // Only a request in decode drafts (its last token is all it has to compute).
    const auto in_decode = [](const SchedulerRequest& sched) {
        return sched.status == RequestStatus::RUNNING && sched.num_computed_tokens == sched.num_tokens() - 1;
    };
    int decoding = 0;
    for (auto& [id, request] : requests_) decoding += in_decode(request->sched);
    for (auto& [id, request] : requests_) {
        Request& r = *request;
        SchedulerRequest& sched = r.sched;
        sched.spec_token_ids.clear();
        // A waiting request (new or preempted) holds no KV, so neither does its draft.
        if (sched.status == RequestStatus::WAITING) proposer_->release_cache(id);
        if (!allowed || !in_decode(sched)) continue;
        // A seeded sample drawn through a draft model's q depends on the draft length (speculation_policy.h).
        const bool timed = !(draft_proposer_ && r.sampling.has_seed && !r.sampling.greedy());
        int k = speculation_policy_->max_draft_tokens(id, decoding, timed);
        // A step yields at most k + 1 tokens: none are drafted past max_tokens or max_model_len.
        if (r.sampling.max_tokens > 0) k = std::min(k, r.sampling.max_tokens - r.num_output_tokens() - 1);
        k = std::min(k, max_model_len_ - sched.num_tokens() - 1);
        if (k > 0)
            draft_requests_.push_back(
                DraftRequest{id, &sched.tokens(), sched.num_prompt_tokens, k, &r.sampling, &r.rng, &sched.spec_token_ids});
    }
    if (draft_requests_.empty()) return;
    const auto start = std::chrono::steady_clock::now();
    proposer_->propose_batch(draft_requests_);
    // The tokens actually drafted: a model-free proposer may find fewer than
    // asked for, and a draft model none for a request it has no blocks for.
    int drafted = 0;
    for (const DraftRequest& d : draft_requests_) drafted += static_cast<int>(d.draft->size());
    speculation_policy_->costs().record_draft(drafted, seconds_since(start));
}

void EngineCore::step() {
    prepare_step();
    const SchedulerOutput scheduled = schedule();
    if (scheduled.empty()) {
        idle();
        return;
    }
    std::vector<StepOutput> outputs;
    const ModelRunnerOutput output = execute(scheduled, outputs);
    scheduler_.update_from_output(scheduled, output);  // the one place request state advances
    process_outputs(scheduled, outputs);
}

void EngineCore::prepare_step() {
    waiting_for_transfers_ = false;
    waiting_for_grammar_ = false;
    collect_prepared_grammars();
    if (connector_) connector_->install_loaded(kv_cache_, kv_manager_);
    propose_drafts();
}

SchedulerOutput EngineCore::schedule() {
    SchedulerOutput scheduled = scheduler_.schedule();
    for (SchedulerRequest* failed : scheduler_.take_failed()) {
        Request& r = request_of(*failed);
        remove(r, false);
        r.stream->finish(nullptr, VLLM_ERR_RUNTIME,
                         "out of memory: the KV cache blocks of this request could not be allocated");
    }
    if (encoder_) scheduled = encode_images(std::move(scheduled));  // before the adapters' per-request list
    if (lora_) scheduled = acquire_adapters(std::move(scheduled));
    erase_finished();
    return scheduled;
}

void EngineCore::idle() {
    if (std::any_of(requests_.begin(), requests_.end(),
                    [](const auto& entry) { return entry.second->sched.waiting_for_grammar; })) {
        // The others wait for their masks: idle until a worker reports one.
        waiting_for_grammar_ = true;
        return;
    }
    if (connector_ && (connector_->loads_in_flight() > 0 || !finished_.empty())) {
        // Every request waits for blocks still arriving, or only ends held
        // back for their saves are left: idle until the I/O threads report
        // progress (progress made meanwhile is taken up next step).
        waiting_for_transfers_ = true;
        if (connector_->take_wakeup()) waiting_for_transfers_ = false;
        return;
    }
    // Only possible when a request can never fit the KV cache (the load
    // checks make that unreachable); fail it rather than spin.
    if (!requests_.empty()) fail_all(VLLM_ERR_RUNTIME, "no request can be scheduled: the KV cache is too small");
}

ModelRunnerOutput EngineCore::execute(const SchedulerOutput& scheduled, std::vector<StepOutput>& outputs) {
    const std::vector<SequenceSlice>& slices =
        runner_.execute(
            scheduled, [this](const SchedulerRequest& sched) { return request_of(sched).wants_prompt_rows(); },
            [this](const SchedulerRequest& sched) {
                const Request& r = request_of(sched);
                return r.pooling.has_value() && !r.pooling->reads_logits();
            },
            lora_ ? &step_adapter_ptrs_ : nullptr);
    ++counters_.model_steps;
    if (speculation_policy_) {
        int positions = 0;
        for (const SequenceSlice& slice : slices) positions += slice.n_tokens;
        speculation_policy_->costs().record_forward(static_cast<int>(slices.size()), positions,
                                                    runner_.forward_seconds());
    }
    return sample(scheduled, slices, outputs);
}

void EngineCore::process_outputs(const SchedulerOutput& scheduled, std::vector<StepOutput>& outputs) {
    for (size_t i = 0; i < scheduled.size(); ++i)
        if (outputs[i].produced || outputs[i].failed) deliver(request_of(*scheduled[i].request), outputs[i]);
    runner_.release_prompt_rows();
    erase_finished();
}

ModelRunnerOutput EngineCore::sample(const SchedulerOutput& scheduled, const std::vector<SequenceSlice>& slices,
                                     std::vector<StepOutput>& outputs) {
    ModelRunnerOutput result;
    result.requests.resize(scheduled.size());
    outputs.assign(scheduled.size(), StepOutput{});
    const int vocab = model_.config().vocab_size;
    for (size_t i = 0; i < scheduled.size(); ++i) {
        const SchedulerRequest& sched = *scheduled[i].request;
        if (connector_) save_completed_blocks(sched, scheduled[i].num_new_tokens);
        if (slices[i].hidden_rows != nullptr) {
            pool_rows(request_of(sched), runner_.hidden_rows(i), slices[i], outputs[i]);
            continue;
        }
        if (slices[i].num_logits == 0) continue;
        Request& r = request_of(sched);
        StepOutput& out = outputs[i];
        float* rows = runner_.logits_rows(i);
        if (r.pooling) {  // a scoring request: its prompt's last row
            score_row(r, rows, out);
            continue;
        }
        try {
            if (r.wants_prompt_rows()) {
                result.requests[i].prompt_rows_done = record_prompt_logprobs(r, rows, slices[i]);
                // The chunk's last row samples, when it ends the prompt.
                if (slices[i].start_pos + slices[i].n_tokens < sched.num_tokens()) continue;
                rows += size_t(slices[i].n_tokens - 1) * vocab;
            }
            out.produced = true;
            const int num_drafts = scheduled[i].num_drafts();
            if (num_drafts > 0) verify_drafts(r, rows, num_drafts, out, result.requests[i]);
            else sample_token(r, rows, out);
        } catch (const Error& e) {
            // An error while sampling belongs to its request alone (e.g. a
            // structured-output state refused as too ambiguous): the batch's
            // KV state is intact, so the others go on.
            out.fail(e.status(), e.what());
        }
        result.requests[i].new_token_ids = out.tokens;
    }
    return result;
}

void EngineCore::pool_rows(Request& r, const float* rows, const SequenceSlice& slice, StepOutput& out) {
    Request::Pooling& p = *r.pooling;
    const int n_prompt = r.num_prompt_tokens();
    if (p.per_token) {
        pool_token_chunk(r, rows, slice, out);
        return;
    }
    p.rows.add(p.type, rows, slice.start_pos, slice.n_tokens, n_prompt, model_.config().dim);
    if (slice.start_pos + slice.n_tokens < n_prompt) return;
    finish_pooling(r, p.rows.finish(p.type, n_prompt, p.normalize, p.dimensions), out);
}

void EngineCore::pool_token_chunk(Request& r, const float* rows, const SequenceSlice& slice, StepOutput& out) {
    Request::Pooling& p = *r.pooling;
    const int dim = model_.config().dim, n_prompt = r.num_prompt_tokens();
    if (slice.start_pos == 0) p.token_rows.clear();  // a preempted request recomputes its prompt
    p.token_rows.insert(p.token_rows.end(), rows, rows + size_t(slice.n_tokens) * dim);
    if (slice.start_pos + slice.n_tokens < n_prompt) return;
    const std::vector<int32_t> prompt(r.sched.tokens().begin(), r.sched.tokens().begin() + n_prompt);
    finish_pooling(r, pool_token_rows(p.token_rows, dim, prompt, p.token, p.normalize, p.dimensions), out);
    std::vector<float>().swap(p.token_rows);
}

void EngineCore::score_row(Request& r, const float* logits, StepOutput& out) {
    if (r.pooling->classifier_labels > 0) {
        finish_pooling(r, classifier_probabilities(logits, r.pooling->classifier_labels, r.pooling->activation), out);
        return;
    }
    finish_pooling(r, {score_from_logits(logits, r.pooling->score_tokens)}, out);
}

void EngineCore::finish_pooling(Request& r, std::vector<float> result, StepOutput& out) {
    r.stream->set_embedding(std::move(result));
    ++counters_.pooling_requests;
    out.produced = true;
    out.reason = finish_reason::kStop;
}

bool EngineCore::record_prompt_logprobs(Request& r, const float* rows, const SequenceSlice& slice) {
    const int vocab = model_.config().vocab_size;
    const int n_prompt = r.num_prompt_tokens();
    for (int j = 0; j < slice.n_tokens; ++j) {
        // Row j is position p's: the logits of the token after it.
        const int p = slice.start_pos + j;
        if (p + 1 < n_prompt && p == static_cast<int>(r.prompt_logprobs.size()))
            r.prompt_logprobs.push_back(
                sampler_.logprobs(rows + size_t(j) * vocab, vocab, r.prompt[p + 1], r.sampling.prompt_logprobs));
    }
    if (static_cast<int>(r.prompt_logprobs.size()) >= n_prompt - 1) {
        r.stream->set_prompt_logprobs(r.prompt_logprobs);
        r.prompt_logprobs_sent = true;
        return true;
    }
    return false;
}

void EngineCore::erase_finished() {
    for (auto it = requests_.begin(); it != requests_.end();)
        it = it->second->sched.status == RequestStatus::FINISHED ? requests_.erase(it) : std::next(it);
}

void EngineCore::prepare_row(Request& r, float* logits) {
    const int vocab = model_.config().vocab_size;
    // Log-probabilities come from the raw row, before anything edits it.
    if (r.sampling.logprobs >= 0) raw_logits_.assign(logits, logits + vocab);
    // Masks: EOS and stop_token_ids cannot be chosen before min_tokens; the grammar's allowed set.
    if (r.num_output_tokens() < r.sampling.min_tokens) {
        for (int32_t id : tokenizer_.eog_ids()) logits[id] = -INFINITY;
        for (int32_t id : r.sampling.stop_token_ids) logits[id] = -INFINITY;
    }
    if (r.constrained()) r.matcher->apply_mask(logits, vocab);
    if (r.mask_bad_words(logits) && std::none_of(logits, logits + vocab, [](float v) { return v > -INFINITY; }))
        throw_runtime("no token is possible here: 'bad_words' masks the only ones the other masks (min_tokens, "
                      "the structured-output constraint) leave");
    // The request's logit_bias and allowed_token_ids (vLLM applies them before the penalties).
    if (const LogitAdjustments* adjust = r.sampling.logit_adjustments.get()) {
        adjust->apply(logits, vocab);
        if (!adjust->leaves_a_token(logits))
            throw_runtime("no token in 'allowed_token_ids' is possible here (min_tokens holds back EOS, the "
                          "structured-output constraint admits none of them, or bad_words masks them)");
    }
    // The host's logits processor: after the masks and adjustments, before penalties.
    if (r.sampling.logits_processor != nullptr)
        r.sampling.logits_processor(r.output.data(), r.num_output_tokens(), logits, vocab,
                                    r.sampling.logits_processor_user_data);
    // Past the thinking budget, the reasoning's end marker is all there is.
    r.reasoning_gate.force(logits, vocab);
}

bool EngineCore::emit(Request& r, int32_t token, StepOutput& out) {
    const int vocab = model_.config().vocab_size;
    if (r.sampling.logprobs >= 0) out.logprobs.push_back(sampler_.logprobs(raw_logits_.data(), vocab, token, r.sampling.logprobs));
    if (r.constrained() && !r.matcher->accept_token(token)) {
        // Only reachable when a logits processor undid the mask.
        out.fail(VLLM_ERR_RUNTIME, "sampled token " + std::to_string(token) + " violates the structured-output "
                                   "constraint (did a logits processor allow a masked token?)");
        return false;
    }
    out.tokens.push_back(token);
    out.reason = append_token(r, token, out.delta);
    // The token that ends the reasoning is the reasoning's: the grammar starts after it.
    r.reasoning_gate.accept(token, tokenizer_.token_view(token, /*skip_special=*/false));
    // Jump-forward: tokens the grammar forces are appended without sampling
    // (the next step prefills them together).
    const size_t sampled = out.tokens.size();
    if (out.reason == nullptr && r.constrained() && config_.jump_forward) {
        const LogitAdjustments* adjust = r.sampling.logit_adjustments.get();
        for (int32_t forced : r.matcher->jump_forward_tokens()) {
            // A token allowed_token_ids leaves out is the sampler's to refuse.
            if (adjust != nullptr && !adjust->allows(forced)) break;
            if (!r.matcher->accept_token(forced)) break;
            out.tokens.push_back(forced);
            if (r.sampling.logprobs >= 0) out.logprobs.push_back(TokenLogprob{forced, 0.0f, {}});
            ++counters_.jump_forward_tokens;
            out.reason = append_token(r, forced, out.delta);
            if (out.reason != nullptr) break;
        }
    }
    out.jumped = out.tokens.size() > sampled;
    // A grammar that admits nothing more ends the request.
    if (out.reason == nullptr && r.constrained() && r.matcher->is_finished()) {
        OutputProcessor::Update update = r.output_processor.finish(finish_reason::kStop);
        out.delta += update.delta;
        out.reason = update.finish_reason;
    }
    return true;
}

void EngineCore::deliver(Request& r, StepOutput& out) {
    if (out.failed) {
        r.stream->finish(nullptr, out.error_status, out.error);
        finish(r, false);
        return;
    }
    r.stream->push_step(out.delta, out.tokens, std::move(out.logprobs));
    if (out.reason != nullptr) {
        finished_.push_back(Finished{r.sched.arrival, r.stream, out.reason});
        finish(r, true);
        return;
    }
    prepare_grammar(r);
}

void EngineCore::sample_token(Request& r, float* logits, StepOutput& out) {
    prepare_row(r, logits);
    const int32_t token = sampler_.sample(r.sampling, logits, model_.config().vocab_size, r.prompt, r.output, r.rng);
    emit(r, token, out);
}

void EngineCore::verify_drafts(Request& r, float* logits, int num_drafts, StepOutput& out, RequestRunOutput& run) {
    const int vocab = model_.config().vocab_size;
    const std::vector<int32_t> drafts(r.sched.spec_token_ids.begin(), r.sched.spec_token_ids.begin() + num_drafts);
    // The draft model's sampled drafts come with the q they were drawn from.
    const std::vector<float>* q = proposer_->draft_probabilities(r.sched.arrival);
    int accepted = 0;
    bool alive = true;
    for (int j = 0; j <= num_drafts && alive; ++j) {
        float* row = logits + size_t(j) * vocab;
        prepare_row(r, row);
        Verdict verdict{-1, false};
        if (j < num_drafts && q != nullptr)
            verdict = verify_sampled_draft_token(sampler_, r.sampling, row, vocab, r.prompt, r.output, drafts[j],
                                                 q->data() + size_t(j) * vocab, r.rng);
        else if (j < num_drafts)
            verdict = verify_draft_token(sampler_, r.sampling, row, vocab, r.prompt, r.output, drafts[j], r.rng);
        else
            verdict.token = sampler_.sample(r.sampling, row, vocab, r.prompt, r.output, r.rng);
        alive = emit(r, verdict.token, out);
        if (verdict.accepted) ++accepted;
        // The rows after a rejection, a finish or jump-forward tokens were
        // computed for another continuation.
        if (!verdict.accepted || out.reason != nullptr || out.jumped) break;
    }
    SpecDecodeStats& stats = *counters_.spec_decode;
    ++stats.num_drafts;
    stats.num_draft_tokens += num_drafts;
    stats.num_accepted_tokens += accepted;
    for (int j = 0; j < accepted; ++j) ++stats.num_accepted_tokens_per_pos[j];
    if (!alive) return;
    speculation_policy_->record(r.sched.arrival, num_drafts, accepted);
    run.num_accepted_drafts = accepted;  // the scheduler's update gives up the rejected drafts' K/V slots
}

const char* EngineCore::append_token(Request& r, int32_t token, std::string& delta) {
    r.output.push_back(token);  // the scheduler request's copy grows in update_from_output
    ++counters_.generation_tokens;
    const int32_t n_out = r.num_output_tokens();
    const bool at_limit = (r.sampling.max_tokens > 0 && n_out >= r.sampling.max_tokens) ||
                          r.num_prompt_tokens() + n_out >= max_model_len_;
    OutputProcessor::Update update = r.output_processor.push(token, n_out, at_limit);
    delta += update.delta;
    return update.finish_reason;
}

void EngineCore::remove(Request& r, bool completed) {
    scheduler_.remove(&r.sched);
    if (connector_) connector_->forget(r.sched.arrival);
    if (proposer_) {
        proposer_->finished(r.sched.arrival, r.sched.tokens(), r.num_prompt_tokens(), completed);
        speculation_policy_->forget(r.sched.arrival);
    }
}

void EngineCore::save_completed_blocks(const SchedulerRequest& r, int num_new_tokens) {
    std::vector<const std::vector<int32_t>*> tables;
    for (int g = 0; g < kv_manager_.num_groups(); ++g) tables.push_back(&kv_manager_.block_table(r, g));
    connector_->save_completed_blocks(r, r.num_computed_tokens + num_new_tokens, tables, kv_cache_);
}

void EngineCore::finish(Request& r, bool completed) {
    remove(r, completed);
    ++counters_.requests_finished;
}

void EngineCore::deliver_finished(bool all) {
    std::vector<Finished> held;
    for (Finished& f : finished_) {
        if (!all && connector_ && connector_->holds_finish(f.id)) held.push_back(std::move(f));
        else f.stream->finish(f.reason);
    }
    finished_.swap(held);
}

void EngineCore::fail_all(vllm_status status, const std::string& error) {
    deliver_finished(/*all=*/true);
    for (auto& [id, r] : requests_) {
        remove(*r, false);
        r->stream->finish(nullptr, status, error);
    }
    requests_.clear();
}

std::optional<kv_transfer::KvTransferStats> EngineCore::kv_transfer_stats() const {
    if (!connector_) return std::nullopt;
    return connector_->stats();
}

EngineStats EngineCore::stats() const {
    EngineStats s = counters_;
    s.running_requests = scheduler_.num_running();
    s.waiting_requests = scheduler_.num_waiting();
    int64_t recurrent_bytes = 0;  // a recurrent group's states less its (unused) K/V storage
    for (int g = 0; g < kv_manager_.num_groups(); ++g) {
        const KVCacheGroup& group = kv_manager_.group(g);
        const BlockPool& pool = group.pool();
        KvCacheGroupStats gs;
        gs.kind = group.spec().kind_name();
        gs.sliding_window = group.spec().sliding_window;
        gs.num_layers = static_cast<int64_t>(group.spec().layers.size());
        gs.blocks_total = pool.num_blocks();
        gs.blocks_free = pool.num_free();
        gs.blocks_used = pool.num_blocks() - pool.num_free();
        gs.blocks_cached = pool.num_cached();
        gs.bytes = static_cast<int64_t>(kv_cache_.group_bytes(g));
        // A recurrent-state group's memory is its states (RecurrentStates),
        // not K/V: count those instead.
        if (group.spec().recurrent) {
            recurrent_bytes += pool.num_blocks() * group.spec().state_bytes - gs.bytes;
            gs.bytes = pool.num_blocks() * group.spec().state_bytes;
        }
        s.kv_cache_groups.push_back(gs);
    }
    // The top-level block counts are the primary (first) group's: full
    // attention when the model has it, as they were before groups.
    const KvCacheGroupStats& primary = s.kv_cache_groups.front();
    s.kv_blocks_total = primary.blocks_total;
    s.kv_blocks_free = primary.blocks_free;
    s.kv_blocks_used = primary.blocks_used;
    s.kv_blocks_cached = primary.blocks_cached;
    s.block_size = kv_cache_.block_size();
    s.kv_cache_bytes = static_cast<int64_t>(kv_cache_.total_bytes()) + recurrent_bytes;
    s.prefix_caching = kv_manager_.prefix_caching();
    s.isa = kernels::active_isa();
    s.prefix_cache_queries = scheduler_.prefix_cache_queries();
    s.prefix_cache_hits = scheduler_.prefix_cache_hits();
    s.preemptions = scheduler_.num_preemptions();
    s.kv_transfer = kv_transfer_stats();
    if (speculation_policy_) {
        s.spec_decode->draft_token_seconds = speculation_policy_->costs().draft_seconds();
        s.spec_decode->forward_seconds = speculation_policy_->costs().measured_forwards();
    }
    if (draft_proposer_) {
        s.spec_decode->draft_kv_blocks_total = draft_proposer_->num_blocks();
        s.spec_decode->draft_kv_blocks_free = draft_proposer_->num_free_blocks();
    }
    if (const ModelWeights* weights = model_.weights()) {
        const PreparedExpertMemory experts = prepared_expert_memory(*weights);
        if (experts.experts_total > 0)
            s.prepared_experts = EngineStats::PreparedExperts{experts.experts, experts.experts_total, experts.bytes,
                                                              experts.max_bytes};
    }
    if (lora_) {
        EngineStats::Lora& l = s.lora.emplace();
        lora_->fill_stats(l);
        std::set<std::string> running, waiting;
        for (const auto& [arrival, r] : requests_)
            if (r->lora) (r->sched.status == RequestStatus::RUNNING ? running : waiting).insert(r->lora->name);
        l.running_adapters.assign(running.begin(), running.end());
        l.waiting_adapters.assign(waiting.begin(), waiting.end());
    }
    if (encoder_) {
        EngineStats::Vision& v = s.vision.emplace();
        v.images_encoded = encoder_->stats().images_encoded;
        v.encoder_cache_hits = encoder_->stats().encoder_cache_hits;
        v.encode_seconds = encoder_->stats().encode_seconds;
    }
    return s;
}

}  // namespace vllm
