// The step's model runner (vLLM V1's GPUModelRunner, on the CPU): turns the
// scheduler's output into the forward's inputs (each request's slice of new
// tokens, its last token then its drafts when it verifies some, its block
// tables, its logits rows: one, 1 + drafts, every row of a prompt_logprobs
// chunk, or none for a prefill chunk that does not end the prompt) and runs
// the forward. It reads the requests' state and changes none of it: the
// engine samples the rows, and the scheduler's update_from_output advances
// the requests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/scheduler_output.h"
#include "kv_cache/kv_cache.h"
#include "model/decoder_model.h"
#include "util/thread_pool.h"

namespace vllm {

class ModelRunner {
public:
    ModelRunner(DecoderModel& model, KVCache& kv_cache, const KVCacheManager& kv_manager, ThreadPool& pool);

    // Runs `scheduled`'s forward; `wants_prompt_rows` names the requests
    // that take every row of their chunk (prompt_logprobs). Returns the
    // slices it ran, in `scheduled`'s order (valid until the next call).
    // `pools` names the pooling requests: their slices take no logits but
    // every token's final hidden row (hidden_rows). `adapters`: per scheduled
    // request, the LoRA adapter its slice runs (nullptr: the base model; no
    // vector: none runs one).
    const std::vector<SequenceSlice>& execute(const SchedulerOutput& scheduled,
                                              const std::function<bool(const SchedulerRequest&)>& wants_prompt_rows,
                                              const std::function<bool(const SchedulerRequest&)>& pools = {},
                                              const std::vector<const LoraAdapter*>* adapters = nullptr);
    // Images (issue 46): the rows of a request's encoder input `input`
    // (SchedulerRequest::encoder_inputs[input], its length * dim floats),
    // which the engine has made ready before the step; a slice reaching its
    // placeholder tokens embeds them instead of the tokens.
    using EncoderRows = std::function<const float*(const SchedulerRequest&, size_t input)>;
    void set_encoder_rows(EncoderRows rows) { encoder_rows_ = std::move(rows); }
    // The first of slice i's hidden rows of the last forward (a pooling request's).
    const float* hidden_rows(size_t i) const { return hidden_.data() + first_hidden_[i] * size_t(model_.config().dim); }
    // The first of slice i's num_logits rows of the last forward.
    float* logits_rows(size_t i);
    // The last forward's wall time (the speculation policy's cost model).
    double forward_seconds() const { return forward_seconds_; }
    // Ends the step: a prompt_logprobs chunk's rows (up to ~64 MiB) are not
    // kept for the steps after it, which need a row or a few per request.
    void release_prompt_rows();

private:
    // Slice `slice` of `r` gets the EmbeddingRows of the images it reaches.
    void add_embedding_rows(const SchedulerRequest& r, SequenceSlice& slice);
    // Slice `slice` of `r` (an M-RoPE request with images) gets its tokens'
    // three positions: the prompt's, then index + rope_delta (transformers').
    void add_rope_positions(const SchedulerRequest& r, SequenceSlice& slice);

    DecoderModel& model_;
    KVCache& kv_cache_;
    const KVCacheManager& kv_manager_;
    ThreadPool& pool_;
    std::vector<SequenceSlice> slices_;
    std::vector<size_t> first_rows_;                 // per slice: its first logits row
    std::vector<std::vector<int32_t>> spec_inputs_;  // per step: a verifying slice's tokens then drafts
    std::vector<float> logits_;
    std::vector<size_t> first_hidden_;  // per slice: its first hidden row (pooling requests)
    std::vector<float> hidden_;
    EncoderRows encoder_rows_;
    std::vector<EmbeddingRows> embedding_rows_;  // the step's, pointed at by slices_
    std::vector<std::vector<int32_t>> rope_inputs_;  // per step: an M-RoPE slice's positions
    bool prompt_rows_ = false;  // some request took its prompt chunk's rows this step
    double forward_seconds_ = 0;
};

}  // namespace vllm
