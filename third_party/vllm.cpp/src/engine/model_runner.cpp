#include "engine/model_runner.h"

#include <chrono>

namespace vllm {

ModelRunner::ModelRunner(DecoderModel& model, KVCache& kv_cache, const KVCacheManager& kv_manager, ThreadPool& pool)
    : model_(model), kv_cache_(kv_cache), kv_manager_(kv_manager), pool_(pool) {}

const std::vector<SequenceSlice>& ModelRunner::execute(
    const SchedulerOutput& scheduled, const std::function<bool(const SchedulerRequest&)>& wants_prompt_rows,
    const std::function<bool(const SchedulerRequest&)>& pools, const std::vector<const LoraAdapter*>* adapters) {
    slices_.clear();
    slices_.reserve(scheduled.size());
    first_rows_.clear();
    spec_inputs_.clear();
    spec_inputs_.reserve(scheduled.size());  // slices point into it
    size_t rows = 0, hidden = 0;
    first_hidden_.clear();
    std::vector<bool> pooling(scheduled.size(), false);
    for (const ScheduledRequest& s : scheduled) {
        const SchedulerRequest& r = *s.request;
        SequenceSlice slice;
        slice.tokens = r.tokens().data() + r.num_computed_tokens;
        slice.n_tokens = s.num_new_tokens;
        slice.start_pos = r.num_computed_tokens;
        slice.second_segment_start = r.second_segment_start;
        for (int g = 0; g < kv_manager_.num_groups(); ++g) slice.block_tables[g] = kv_manager_.block_table(r, g).data();
        // Drafts ride after the request's last token.
        const int num_drafts = s.num_drafts();
        if (num_drafts > 0) {
            std::vector<int32_t>& input = spec_inputs_.emplace_back(r.tokens().begin() + r.num_computed_tokens, r.tokens().end());
            input.insert(input.end(), r.spec_token_ids.begin(), r.spec_token_ids.begin() + num_drafts);
            slice.tokens = input.data();
        }
        slice.num_logits = r.num_computed_tokens + slice.n_tokens >= r.num_tokens() ? 1 + num_drafts : 0;
        // prompt_logprobs: every row of a prompt chunk (drafts come only in decode).
        if (wants_prompt_rows(r)) {
            slice.num_logits = slice.n_tokens;
            prompt_rows_ = true;
        }
        first_hidden_.push_back(hidden);
        if (pools && pools(r)) {
            pooling[slices_.size()] = true;
            slice.num_logits = 0;  // its output is its hidden rows, set below
            hidden += slice.n_tokens;
        }
        if (adapters != nullptr) slice.lora = (*adapters)[slices_.size()];
        first_rows_.push_back(rows);
        rows += slice.num_logits;
        slices_.push_back(slice);
    }
    if (hidden > 0) {
        hidden_.resize(hidden * size_t(model_.config().dim));
        for (size_t i = 0; i < slices_.size(); ++i)
            if (pooling[i]) slices_[i].hidden_rows = hidden_.data() + first_hidden_[i] * size_t(model_.config().dim);
    }
    const auto start = std::chrono::steady_clock::now();
    model_.forward(slices_, kv_cache_, pool_, logits_);
    // The rest of the step is serial, and its output wakes the streams'
    // consumers: let them have the workers' cores (BENCHMARKS.md, "HTTP
    // cost: one wake-up per step").
    pool_.park();
    forward_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return slices_;
}

float* ModelRunner::logits_rows(size_t i) {
    // logit_count(): the vocabulary, or a classification head's labels.
    return logits_.data() + first_rows_[i] * size_t(model_.logit_count());
}

void ModelRunner::release_prompt_rows() {
    if (prompt_rows_) std::vector<float>().swap(logits_);
    prompt_rows_ = false;
}

}  // namespace vllm
