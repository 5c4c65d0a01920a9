// /pooling in the OpenAI protocol room (vLLM's Pooling API, issue 43): the
// /v1/embeddings body (input, encoding_format, dimensions, normalize,
// truncate_prompt_tokens, add_special_tokens, priority) plus `task`:
// "embed" (one pooled vector per input), "token_embed" (every kept prompt
// row: vLLM's ALL / STEP token pooling, a list of rows per input) or
// "classify" (the class probabilities); absent, the model's own task
// (classify for a classification model, else embed). Answered as vLLM's
// PoolingResponse: data[i] = {index, object "pooling", data}, with usage.
// The C ABI (vllm_pooling) and the HTTP server share it. Errors:
// INVALID_ARGUMENT naming the field.
#pragma once
#include <string>
#include <string_view>

#include "engine/engine.h"

namespace vllm::chat {

std::string run_pooling_request(Engine& engine, std::string_view request_json);

}  // namespace vllm::chat
