// The one parser of a request's sampling fields, under the names vLLM's
// SamplingParams (and OpenAI's requests) give them: every SamplingConfig is
// built through it. A chat request reads them from its body, a completion
// submitted with options (vllm_request_submit_with_options) from its
// options JSON, and SamplingConfig::from_c from the fields of a
// vllm_sampling_params, so each field has one set of limits and one error
// text (INVALID_ARGUMENT naming the field: "'top_p' must be in (0, 1] (got
// 1.5)"), whichever way it came in.
//
// Fields: temperature, top_p, top_k, min_p, max_tokens (and chat's
// max_completion_tokens), seed, presence_penalty, frequency_penalty,
// repetition_penalty, min_tokens, ignore_eos, stop, logit_bias,
// allowed_token_ids (sample/logit_adjustments.h), stop_token_ids,
// include_stop_str_in_output, skip_special_tokens, prompt_logprobs,
// truncate_prompt_tokens, bad_words, lora_int_id. Structured output, logprobs and n are
// the protocols' own (their names mean other things in chat and
// completions) and are not read here; their shared limits are below.
#pragma once
#include <cstdint>
#include <string_view>

#include "sample/sampling_config.h"
#include "util/json.h"

namespace vllm {

// The most log-probabilities a position reports (logprobs, top_logprobs,
// prompt_logprobs), as in vLLM's default max_logprobs.
constexpr int32_t kMaxLogprobs = 20;

// Reads the fields above that `object` has (absent or null: left as
// `config` has them, so the caller's defaults stay) into `config`, others
// ignored (a chat body has many). INVALID_ARGUMENT naming the field for a
// value of the wrong type or out of range.
void read_sampling_fields(const json::Value& object, SamplingConfig& config);

// The options JSON of vllm_request_submit_with_options ("": none) read over
// `config`: as read_sampling_fields, and INVALID_ARGUMENT for text that is
// not a JSON object or a key that is not one of the fields above (named
// with the known ones).
void read_sampling_options(std::string_view options_json, SamplingConfig& config);

}  // namespace vllm
