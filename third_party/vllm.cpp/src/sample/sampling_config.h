// Validated sampling options of one request (strings owned here), built by
// the one parser of the sampling fields (sample/sampling_fields.h), from a
// request body, an options JSON or a vllm_sampling_params (from_c).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sample/logit_adjustments.h"
#include "vllm.h"

namespace vllm {

namespace structured {
class Grammar;
class GrammarCompiler;
}

struct SamplingConfig {
    float temperature = 1.0f;
    float top_p = 1.0f;
    int32_t top_k = 0;       // <= 0: all tokens
    float min_p = 0.0f;
    int32_t max_tokens = 16; // <= 0: up to max_model_len
    bool has_seed = false;
    uint64_t seed = 0;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    float repetition_penalty = 1.0f;
    int32_t min_tokens = 0;
    bool ignore_eos = false;
    std::vector<std::string> stop;
    // vLLM's stop_token_ids (ascending, each once): generating one finishes
    // the request ("stop"; its text, unless a special token's, is output),
    // masked like EOS before min_tokens. include_stop_str_in_output: a
    // matched stop string stays in the text. Neither is in
    // vllm_sampling_params: an options JSON or a chat body sets them.
    std::vector<int32_t> stop_token_ids;
    bool include_stop_str_in_output = false;
    // vLLM's skip_special_tokens: control tokens add no text (default);
    // false: their text is output too (EOS, which ends the output, never is).
    bool skip_special_tokens = true;
    // vLLM's truncate_prompt_tokens: > 0 keeps the prompt's last that many
    // tokens (left truncation); 0: the whole prompt.
    int32_t truncate_prompt_tokens = 0;
    // vLLM's LoRARequest.lora_int_id: the LoRA adapter the request runs
    // (registered on the engine, engine/lora_registry.h); 0: the base model.
    int32_t lora_int_id = 0;
    // vLLM's bad_words: words the output may not contain (the engine's
    // Request holds their token sequences).
    std::vector<std::string> bad_words;
    // Host callback run on every decode step before sampling (borrowed from
    // the caller, who keeps it valid for the request's life).
    vllm_logits_processor logits_processor = nullptr;
    void* logits_processor_user_data = nullptr;
    // Log-probabilities to report per generated token (the chat layer's
    // logprobs / top_logprobs): -1 none; k >= 0 the sampled token's and the
    // k most likely ones'. Taken from the raw model output, before masks,
    // processors and penalties (vLLM's default).
    int32_t logprobs = -1;
    // vLLM's prompt_logprobs: -1 none; k >= 0 each prompt token's
    // log-probability (from the position before it) and the k most likely
    // ones'. Such a request computes every prompt position (no prefix-cache
    // hit) in chunks of bounded logits rows.
    int32_t prompt_logprobs = -1;
    // logit_bias and allowed_token_ids (sample/logit_adjustments.h), shared
    // by a chat call's choices; nullptr: none.
    std::shared_ptr<const LogitAdjustments> logit_adjustments;
    // The compiled structured-output constraint (JSON Schema, regex, choice,
    // GBNF or any JSON object), shared; nullptr: unconstrained.
    std::shared_ptr<const structured::Grammar> grammar;
    // A chat output that starts inside a reasoning section (engine/reasoning_gate.h):
    // `grammar` applies from the token that completes end_marker (the
    // reasoning parser's end, e.g. "</think>"), the reasoning before it is
    // free; after token_budget (vLLM's thinking_token_budget, -1: none)
    // tokens still inside it, the engine forces forced_end's tokens (which
    // end with end_marker). end_marker "": no reasoning section.
    // start_markers: the output starts outside the section, which opens
    // where the output completes one of these (a model that opens its
    // reasoning itself: "<think>", "[THINK]"); the budget counts from there.
    // other_end_markers: other spellings that end it as well (Granite's).
    struct ReasoningSection {
        std::string end_marker;
        std::string forced_end;
        int32_t token_budget = -1;
        std::vector<std::string> start_markers;
        std::vector<std::string> other_end_markers;
    } reasoning;

    bool greedy() const { return temperature <= 1e-5f; }
    // `prompt` cut to its last truncate_prompt_tokens tokens (when set).
    void truncate_prompt(std::vector<int32_t>& prompt) const;
    bool is_stop_token(int32_t token) const;

    // INVALID_ARGUMENT naming the field for a token id (logit_bias,
    // allowed_token_ids, stop_token_ids) at or past vocab_size.
    void check_vocabulary(int32_t vocab_size) const;

    // The C struct's fields read by read_sampling_fields (the same limits
    // and error texts as a request body's), after the struct's own checks
    // (NULL pointers, n_stop, at most one structured constraint);
    // INVALID_ARGUMENT naming the field. The
    // constraint compiles through `compiler` (the engine's: its workers and
    // budget; nullptr: on this thread).
    static SamplingConfig from_c(const vllm_sampling_params& params,
                                 const structured::GrammarCompiler* compiler = nullptr);
};

}  // namespace vllm
