// A completion's generated output as the C ABI's JSON shows it
// (vllm_request_output, vllm_request_prompt_logprobs, a poll's logprobs_json):
// token ids, sampled tokens' logprobs with their alternatives and bytes.
#pragma once
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "sample/token_logprob.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"

namespace vllm::api {

// The JSON array of `sampled` (vllm_request_output's "logprobs" entries).
json::Value logprob_entries(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& sampled);
// A request's prompt_logprobs as vllm_request_output shows them: null for the
// first prompt token (nothing precedes it), then one entry each.
json::Value prompt_logprob_entries(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& entries);
// vllm_request_output's object; "logprobs" null unless `logprobs`.
std::string output_json(const Tokenizer& tokenizer, const RequestStream::Result& result, bool logprobs);

}  // namespace vllm::api
