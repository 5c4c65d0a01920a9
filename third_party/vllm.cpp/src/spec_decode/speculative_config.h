// speculative_config (vllm_model_params field 9): vLLM's --speculative-config
// JSON, validated at load. Every refusal is INVALID_ARGUMENT naming the field.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace vllm {

enum class SpeculativeMethod { NGRAM, SUFFIX, DRAFT_MODEL };

struct SpeculativeConfig {
    SpeculativeMethod method = SpeculativeMethod::NGRAM;
    // The most draft tokens verified per request and step (suffix decoding
    // proposes fewer where its match is short or unlikely).
    int num_speculative_tokens = 0;

    // "draft_model": the draft's GGUF file or Hugging Face directory (it
    // exists; its vocabulary is checked against the target's at load).
    std::string model;
    // "draft_model": the draft proposes only token ids below this (0: any
    // id), so each draft token computes that many logits instead of the
    // whole vocabulary's (FR-Spec's reduced drafting vocabulary: a BPE
    // vocabulary numbers its tokens in merge order, so the low ids are the
    // common ones). Verification is unchanged, so the output is too: the
    // target accepts or replaces every draft token, and a sampled draft's
    // q is zero outside the ids it drew from.
    int draft_vocab_size = 0;
    // "draft_model": a request's draft ends after a token the draft gave
    // less than this probability (0: every draft runs to its length), as
    // Hugging Face's assistant_confidence_threshold does. Past such a token
    // the next ones are mostly rejected, and each costs a draft forward and
    // a verified position. Verification is unchanged, so the output is too
    // (the stop depends only on the draft's own distribution).
    double draft_confidence_threshold = kDefaultDraftConfidenceThreshold;

    // "ngram" (prompt lookup): the n-gram lengths matched, longest first.
    int prompt_lookup_min = 5;
    int prompt_lookup_max = 5;

    // "suffix": vLLM's suffix_decoding_* limits.
    int suffix_decoding_max_tree_depth = 24;
    int suffix_decoding_max_cached_requests = 10000;
    double suffix_decoding_max_spec_factor = 1.0;
    double suffix_decoding_min_token_prob = 0.1;

    // The dynamic switch (speculation_policy.h): no drafts in a step whose
    // batch runs more than this many requests (vLLM v0's name); 0: never.
    int disable_by_batch_size = kDefaultDisableByBatchSize;

    // A draft longer than this is refused as absurd: verification runs
    // k + 1 positions per request and step.
    static constexpr int kMaxSpeculativeTokens = 64;
    static constexpr int kMaxPromptLookup = 1024;
    static constexpr int kMaxTreeDepth = 1024;
    static constexpr int kDefaultDisableByBatchSize = 4;
    static constexpr double kDefaultDraftConfidenceThreshold = 0.5;

    // The JSON object (speculation is off when the field is NULL or "";
    // callers do not call this then).
    static SpeculativeConfig parse(std::string_view json_text);
};

const char* method_name(SpeculativeMethod method);

}  // namespace vllm
