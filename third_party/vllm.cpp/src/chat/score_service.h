// /score and /rerank in the OpenAI protocol room (issue 43), as vLLM serves
// them: /score takes text_1/text_2 (or queries/documents), one against many
// or pair by pair, and answers a list of scores; /rerank (Jina's shape, also
// /v1/rerank and Cohere's /v2/rerank) takes a query and documents and
// answers them ranked by relevance_score, top_n of them. A model with a
// score head (hf_overrides classifier_from_token: Qwen3-Reranker's yes/no
// form) scores each (query, document) prompt's last row of logits; an
// embedding model scores the cosine similarity of the two embeddings, as
// vLLM does for embedding models. Errors: INVALID_ARGUMENT naming the field.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace vllm::chat {

struct Scores {
    std::vector<float> scores;  // one per pair, in order
    int64_t prompt_tokens = 0;
};

// Scores each (queries[i or 0], documents[i]) pair: one query against every
// document, or as many queries as documents, pair by pair. Runs on the
// calling thread until every score is in.
Scores score_pairs(Engine& engine, const std::vector<std::string>& queries, const std::vector<std::string>& documents,
                   int32_t truncate_prompt_tokens, int32_t priority);

// The whole calls: body -> vLLM's score / rerank response JSON.
std::string run_score_request(Engine& engine, std::string_view request_json);
std::string run_rerank_request(Engine& engine, std::string_view request_json);

}  // namespace vllm::chat
