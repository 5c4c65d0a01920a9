// /classify in the OpenAI protocol room (vLLM's classify task, issue 43):
// a classification model's (a *ForSequenceClassification head) body parsed
// as /v1/embeddings' (input as a string, a list of strings, token ids or
// token id lists; truncate_prompt_tokens, add_special_tokens, priority),
// one engine classification request per input submitted together, each
// answered with vLLM's ClassificationData: index, label (id2label of the
// likeliest class), probs (softmax; sigmoid for one label), num_classes.
// The C ABI (vllm_classify) and the HTTP server share it. Errors:
// INVALID_ARGUMENT naming the field, or naming the task for a model
// without a classification head.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "chat/completion_request.h"
#include "engine/engine.h"

namespace vllm::chat {

struct Classifications {
    std::vector<std::vector<float>> probs;  // one per input, in order
    int64_t prompt_tokens = 0;
};

// Classifies each input (on the calling thread, until every one is in).
Classifications classify_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs,
                                int32_t truncate_prompt_tokens, bool add_special_tokens, int32_t priority);

// The whole call: body -> vLLM's classification response JSON.
std::string run_classify_request(Engine& engine, std::string_view request_json);

}  // namespace vllm::chat
