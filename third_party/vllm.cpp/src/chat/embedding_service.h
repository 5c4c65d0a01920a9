// /v1/embeddings in the OpenAI protocol room (issue 43): the body parsed
// (input as a string, a list of strings, token ids or token id lists;
// encoding_format float or base64; dimensions; vLLM's
// truncate_prompt_tokens, normalize, add_special_tokens, priority), one
// engine pooling request per input submitted together (the engine batches
// them), their vectors rendered as OpenAI's list of embedding objects with
// usage. The C ABI (vllm_embeddings, vllm_embed) and the HTTP server share it.
// Errors: INVALID_ARGUMENT naming the field; an input's own failure in the
// engine's words with its index.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/completion_request.h"
#include "engine/engine.h"
#include "engine/pooler.h"
#include "util/json.h"

namespace vllm::chat {

struct EmbeddingRequest {
    std::string model;
    std::vector<CompletionPrompt> inputs;  // at least one
    bool base64 = false;                   // encoding_format "base64"
    PoolingParams pooling;                 // dimensions, normalize
    // vLLM's: keep the last k tokens (-1: max_model_len; 0: not cut).
    int32_t truncate_prompt_tokens = 0;
    bool add_special_tokens = true;
    int32_t priority = 0;
};

EmbeddingRequest parse_embedding_request(std::string_view request_json);

struct Embeddings {
    std::vector<std::vector<float>> vectors;  // one per input, in order
    int64_t prompt_tokens = 0;
};

// Queues one input's ids (cut to its last `keep` tokens) as a pooling
// request of some kind (embed, classify, ...).
using SubmitPooled = std::function<std::shared_ptr<RequestStream>(std::vector<int32_t> ids, int32_t keep)>;

// Every pooling route's road: tokenizes the inputs, submits them all with
// `submit`, waits for every vector (on the calling thread). A failed or
// refused input cancels the rest and throws, naming it (input[i]) when
// there are several.
Embeddings pool_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs, int32_t truncate_prompt_tokens,
                       bool add_special_tokens, const SubmitPooled& submit);

// pool_inputs with the engine's embed task (submit_pooling, `pooling`'s options).
Embeddings embed_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs, const PoolingParams& pooling,
                        int32_t truncate_prompt_tokens, bool add_special_tokens, int32_t priority);

// The pooling routes' usage ({prompt_tokens, total_tokens}: no completion)
// and OpenAI's list envelope around `data` ({id: <prefix>-..., object
// "list", created, model, data, usage}), as /v1/embeddings and /score answer.
json::Value pooling_usage(int64_t prompt_tokens);
std::string render_pooling_list(const std::string& id_prefix, const std::string& model, json::Value data,
                                int64_t prompt_tokens);

// The whole call: body -> OpenAI's embeddings response JSON.
std::string run_embeddings_request(Engine& engine, std::string_view request_json);

}  // namespace vllm::chat
