// Sampling options a request carries beyond vllm_sampling_params, under the
// names OpenAI and vLLM requests give them: logit_bias and allowed_token_ids
// (sample/logit_adjustments.h), stop_token_ids,
// include_stop_str_in_output, skip_special_tokens, prompt_logprobs,
// truncate_prompt_tokens and bad_words. A chat request reads them from its body,
// vllm_request_submit_with_options from its options JSON.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "sample/logit_adjustments.h"
#include "sample/sampling_config.h"
#include "util/json.h"

namespace vllm {

struct RequestOptions {
    LogitAdjustments logit_adjustments;
    std::vector<int32_t> stop_token_ids;  // ascending, each once
    bool include_stop_str_in_output = false;
    bool skip_special_tokens = true;
    int32_t prompt_logprobs = -1;  // 0..20; -1: not asked for
    int32_t truncate_prompt_tokens = 0;  // >= 1: keep the prompt's last that many tokens; 0: not set
    std::vector<std::string> bad_words;

    // The known keys of `object`, others ignored (a chat body has many);
    // absent or null: not set. INVALID_ARGUMENT naming the field for a bad
    // value (LogitAdjustments::from_json's; stop_token_ids not an array of
    // token ids; include_stop_str_in_output or skip_special_tokens not a
    // boolean; prompt_logprobs not an integer in 0..20;
    // truncate_prompt_tokens not a positive integer: vLLM's -1, the model's
    // length, is refused by name; bad_words not an array of non-empty
    // strings).
    static RequestOptions from_json(const json::Value& object);
    // The options JSON of vllm_request_submit_with_options ("": none): as
    // from_json, and INVALID_ARGUMENT for text that is not a JSON object or
    // an unknown key (named with the known ones).
    static RequestOptions parse(std::string_view options_json);

    // Sets them in a request's config.
    void apply_to(SamplingConfig& config) const;
};

}  // namespace vllm
