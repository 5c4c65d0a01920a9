#include "engine/engine_core.h"

#include <cmath>

#include "util/error.h"

namespace vllm {

EngineCore::EngineCore(const EngineConfig& config, LlamaModel& model, const Tokenizer& tokenizer,
                       const KvCachePlan& kv_plan, int max_model_len)
    : config_(config),
      model_(model),
      tokenizer_(tokenizer),
      max_model_len_(max_model_len),
      kv_cache_(kv_plan.groups, kv_plan.group_blocks, model.config().n_kv_heads, model.config().head_dim,
                config.block_size, config.kv_dtype),
      kv_manager_(kv_plan.groups, kv_plan.group_blocks, config.block_size, config.prefix_caching),
      scheduler_(parse_scheduling_policy(config.scheduling_policy), config.max_num_seqs,
                 config.max_num_batched_tokens, kv_manager_),
      pool_(config.num_threads) {}

void EngineCore::add(std::unique_ptr<Request> request) {
    counters_.prompt_tokens += request->num_prompt_tokens();
    request->stream->set_prompt_tokens(request->num_prompt_tokens());
    scheduler_.add(&request->sched);
    const uint64_t id = request->sched.arrival;
    requests_.emplace(id, std::move(request));
}

void EngineCore::drop_cancelled() {
    for (auto it = requests_.begin(); it != requests_.end();) {
        Request& r = *it->second;
        if (!r.stream->cancel_requested()) {
            ++it;
            continue;
        }
        scheduler_.remove(&r.sched);
        r.stream->mark_aborted();
        ++counters_.requests_aborted;
        it = requests_.erase(it);
    }
}

void EngineCore::step() {
    std::vector<ScheduledRequest> batch = scheduler_.schedule();
    if (batch.empty()) {
        // Only possible when a request can never fit the KV cache (the load
        // checks make that unreachable); fail it rather than spin.
        if (!requests_.empty()) fail_all(VLLM_ERR_RUNTIME, "no request can be scheduled: the KV cache is too small");
        return;
    }
    std::vector<SequenceSlice> slices;
    slices.reserve(batch.size());
    for (const ScheduledRequest& s : batch) {
        const SchedulerRequest& r = *s.request;
        SequenceSlice slice;
        slice.tokens = r.tokens().data() + r.num_computed_tokens;
        slice.n_tokens = s.num_new_tokens;
        slice.start_pos = r.num_computed_tokens;
        for (int g = 0; g < kv_manager_.num_groups(); ++g) slice.block_tables[g] = kv_manager_.block_table(r, g).data();
        slice.want_logits = r.num_computed_tokens + s.num_new_tokens == r.num_tokens();
        slices.push_back(slice);
    }
    model_.forward(slices, kv_cache_, pool_, logits_);
    ++counters_.model_steps;

    const int vocab = model_.config().vocab_size;
    size_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
        SchedulerRequest& sched = *batch[i].request;
        sched.num_computed_tokens += batch[i].num_new_tokens;
        kv_manager_.commit_computed(sched);
        if (!slices[i].want_logits) continue;
        Request& r = request_of(sched);
        try {
            sample_and_output(r, logits_.data() + row++ * size_t(vocab));
        } catch (const Error& e) {
            // An error while sampling belongs to its request alone (e.g. a
            // structured-output state refused as too ambiguous): the batch's
            // KV state is intact, so the others go on.
            r.stream->finish(nullptr, e.status(), e.what());
            finish(r);
        }
    }
    for (auto it = requests_.begin(); it != requests_.end();)
        it = it->second->sched.status == RequestStatus::FINISHED ? requests_.erase(it) : std::next(it);
}

void EngineCore::sample_and_output(Request& r, float* logits) {
    const int vocab = model_.config().vocab_size;
    // Log-probabilities come from the raw row, before anything edits it.
    if (r.sampling.logprobs >= 0) raw_logits_.assign(logits, logits + vocab);
    // Masks: EOS cannot be chosen before min_tokens; the grammar's allowed set.
    if (r.num_output_tokens() < r.sampling.min_tokens)
        for (int32_t id : tokenizer_.eog_ids()) logits[id] = -INFINITY;
    if (r.matcher) r.matcher->apply_mask(logits, vocab);
    // The host's logits processor: after the masks, before penalties.
    if (r.sampling.logits_processor != nullptr)
        r.sampling.logits_processor(r.output.data(), r.num_output_tokens(), logits, vocab,
                                    r.sampling.logits_processor_user_data);
    const int32_t token = sampler_.sample(r.sampling, logits, vocab, r.prompt, r.output, r.rng);

    std::vector<TokenLogprob> logprobs;
    if (r.sampling.logprobs >= 0) logprobs.push_back(sampler_.logprobs(raw_logits_.data(), vocab, token, r.sampling.logprobs));
    if (r.matcher && !r.matcher->accept_token(token)) {
        // Only reachable when a logits processor undid the mask.
        r.stream->finish(nullptr, VLLM_ERR_RUNTIME,
                         "sampled token " + std::to_string(token) + " violates the structured-output constraint "
                         "(did a logits processor allow a masked token?)");
        finish(r);
        return;
    }
    std::vector<int32_t> step_tokens{token};
    std::string delta;
    const char* reason = append_token(r, token, delta);
    // Jump-forward: tokens the grammar forces are appended without sampling
    // (the next step prefills them together).
    if (reason == nullptr && r.matcher && config_.jump_forward) {
        for (int32_t forced : r.matcher->jump_forward_tokens()) {
            if (!r.matcher->accept_token(forced)) break;
            step_tokens.push_back(forced);
            if (r.sampling.logprobs >= 0) logprobs.push_back(TokenLogprob{forced, 0.0f, {}});
            ++counters_.jump_forward_tokens;
            reason = append_token(r, forced, delta);
            if (reason != nullptr) break;
        }
    }
    // A grammar that admits nothing more ends the request.
    if (reason == nullptr && r.matcher && r.matcher->is_finished()) {
        OutputProcessor::Update update = r.output_processor.finish(finish_reason::kStop);
        delta += update.delta;
        reason = update.finish_reason;
    }
    r.stream->push_step(delta, step_tokens, std::move(logprobs));
    if (reason != nullptr) {
        finished_.emplace_back(r.stream, reason);
        finish(r);
    }
}

const char* EngineCore::append_token(Request& r, int32_t token, std::string& delta) {
    r.output.push_back(token);
    r.sched.append_token(token);
    ++counters_.generation_tokens;
    const int32_t n_out = r.num_output_tokens();
    const bool at_limit = (r.sampling.max_tokens > 0 && n_out >= r.sampling.max_tokens) ||
                          r.num_prompt_tokens() + n_out >= max_model_len_;
    OutputProcessor::Update update = r.output_processor.push(token, n_out, at_limit);
    delta += update.delta;
    return update.finish_reason;
}

void EngineCore::finish(Request& r) {
    scheduler_.remove(&r.sched);
    ++counters_.requests_finished;
}

void EngineCore::deliver_finished() {
    for (auto& [stream, reason] : finished_) stream->finish(reason);
    finished_.clear();
}

void EngineCore::fail_all(vllm_status status, const std::string& error) {
    deliver_finished();
    for (auto& [id, r] : requests_) {
        scheduler_.remove(&r->sched);
        r->stream->finish(nullptr, status, error);
    }
    requests_.clear();
}

EngineStats EngineCore::stats() const {
    EngineStats s = counters_;
    s.running_requests = scheduler_.num_running();
    s.waiting_requests = scheduler_.num_waiting();
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
    s.kv_cache_bytes = kv_cache_.total_bytes();
    s.prefix_caching = kv_manager_.prefix_caching();
    s.prefix_cache_queries = scheduler_.prefix_cache_queries();
    s.prefix_cache_hits = scheduler_.prefix_cache_hits();
    s.preemptions = scheduler_.num_preemptions();
    return s;
}

}  // namespace vllm
