#include "engine/model_runner.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "util/error.h"

namespace vllm {

ModelRunner::ModelRunner(DecoderModel& model, KVCache& kv_cache, const KVCacheManager& kv_manager, ThreadPool& pool)
    : model_(model), kv_cache_(kv_cache), kv_manager_(kv_manager), pool_(pool) {}

const std::vector<SequenceSlice>& ModelRunner::execute(
    const SchedulerOutput& scheduled, const std::function<bool(const SchedulerRequest&)>& wants_prompt_rows,
    const std::function<bool(const SchedulerRequest&)>& pools, const std::vector<const LoraAdapter*>* adapters) {
    slices_.clear();
    slices_.reserve(scheduled.size());
    embedding_rows_.clear();
    first_rows_.clear();
    spec_inputs_.clear();
    spec_inputs_.reserve(scheduled.size());  // slices point into it
    rope_inputs_.clear();
    rope_inputs_.reserve(scheduled.size());  // slices point into it
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
        if (!r.encoder_inputs.empty()) add_embedding_rows(r, slice);
        if (!r.rope_positions.empty()) add_rope_positions(r, slice);
        first_rows_.push_back(rows);
        rows += slice.num_logits;
        slices_.push_back(slice);
    }
    // embedding_rows_ is complete: point the slices into it.
    for (size_t i = 0, next = 0; i < slices_.size(); ++i) {
        if (slices_[i].n_embedding_rows == 0) continue;
        slices_[i].embedding_rows = embedding_rows_.data() + next;
        next += slices_[i].n_embedding_rows;
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

void ModelRunner::add_embedding_rows(const SchedulerRequest& r, SequenceSlice& slice) {
    const int begin = slice.start_pos, end = slice.start_pos + slice.n_tokens;
    const int64_t dim = model_.config().dim;
    for (size_t k = 0; k < r.encoder_inputs.size(); ++k) {
        const EncoderSpan& span = r.encoder_inputs[k];
        const int first = std::max(span.offset, begin), last = std::min(span.offset + span.length, end);
        if (first >= last) continue;
        const float* rows = encoder_rows_ ? encoder_rows_(r, k) : nullptr;
        if (rows == nullptr) throw_runtime("image " + std::to_string(k + 1) + " of a request has no encoder rows");
        embedding_rows_.push_back(EmbeddingRows{first - begin, last - first, rows + int64_t(first - span.offset) * dim,
                                                span.indivisible ? span.offset + span.length - 1 : -1});
        ++slice.n_embedding_rows;
    }
}

void ModelRunner::add_rope_positions(const SchedulerRequest& r, SequenceSlice& slice) {
    std::vector<int32_t>& positions = rope_inputs_.emplace_back();
    positions.reserve(size_t(slice.n_tokens) * 3);
    const int prompt = static_cast<int>(r.rope_positions.size() / 3);
    for (int i = slice.start_pos; i < slice.start_pos + slice.n_tokens; ++i) {
        if (i < prompt) {
            positions.insert(positions.end(), r.rope_positions.begin() + 3 * i, r.rope_positions.begin() + 3 * i + 3);
        } else {
            const int32_t p = i + r.rope_delta;
            positions.insert(positions.end(), {p, p, p});
        }
    }
    slice.rope_positions = positions.data();
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
