#include "chat/score_service.h"

#include <algorithm>
#include <numeric>

#include "chat/embedding_service.h"
#include "chat/openai_protocol.h"
#include "util/error.h"
#include "util/json_fields.h"
#include "util/utf8.h"

namespace vllm::chat {

namespace {

using json::field;

// Qwen3-Reranker's prompt, as vLLM's examples and score template write it
// (examples/pooling/score/template/qwen3_reranker.jinja): the default
// instruction, the query and the document, the answer left to the model's
// yes/no.
constexpr const char* kQwen3RerankerPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
constexpr const char* kQwen3RerankerInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";
constexpr const char* kQwen3RerankerSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

// One pair's prompt ids for a score head: Qwen3-Reranker's template, or the
// query's ids (with the model's special tokens) then the document's.
std::vector<int32_t> pair_prompt(const Engine& engine, const std::string& query, const std::string& document) {
    const Tokenizer& tok = engine.tokenizer();
    if (engine.pooler_config().qwen3_reranker_prompt) {
        const std::string text = std::string(kQwen3RerankerPrefix) + "<Instruct>: " + kQwen3RerankerInstruction +
                                 "\n<Query>: " + query + "\n<Document>: " + document + kQwen3RerankerSuffix;
        return tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    }
    std::vector<int32_t> ids = tok.encode(query, true, true);
    const std::vector<int32_t> doc = tok.encode(document, false, true);
    ids.insert(ids.end(), doc.begin(), doc.end());
    return ids;
}

// A cross-encoder's (classification head) pair as its tokenizer's pair
// template frames it: BERT's [CLS] query [SEP] document [SEP] (WordPiece),
// RoBERTa's <s> query </s></s> document </s> (XLM-RoBERTa's Unigram);
// `second` is where the document's segment starts (token type 1 in BERT).
std::vector<int32_t> cross_encoder_pair(const Tokenizer& tok, const std::string& query, const std::string& document,
                                        int32_t& second) {
    std::vector<int32_t> ids = tok.encode(query, true, true);
    const std::vector<int32_t> doc = tok.encode(document, true, true);
    const bool framed = !ids.empty() && !doc.empty() && doc.front() == ids.front() && tok.data().add_bos;
    if (tok.data().model != "bert" && framed) ids.push_back(ids.back());  // RoBERTa's doubled separator
    second = static_cast<int32_t>(ids.size());
    ids.insert(ids.end(), doc.begin() + (framed ? 1 : 0), doc.end());
    return ids;
}

void check_texts(const std::vector<std::string>& texts, const char* name) {
    if (texts.empty()) throw_invalid_argument(std::string("'") + name + "' must not be empty");
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string where = texts.size() == 1 ? name : std::string(name) + "[" + std::to_string(i) + "]";
        if (texts[i].empty()) throw_invalid_argument("'" + where + "' must not be empty");
        if (!utf8::is_valid(texts[i])) throw_invalid_argument("'" + where + "' is not valid UTF-8");
    }
}

Scores score_with_head(Engine& engine, const std::vector<std::string>& queries,
                       const std::vector<std::string>& documents, int32_t truncate, int32_t priority) {
    std::vector<std::shared_ptr<RequestStream>> streams;
    Scores out;
    try {
        for (size_t i = 0; i < documents.size(); ++i) {
            const std::string& query = queries[queries.size() == 1 ? 0 : i];
            int32_t second = 0;
            std::vector<int32_t> ids = engine.serves_classify()
                                           ? cross_encoder_pair(engine.tokenizer(), query, documents[i], second)
                                           : pair_prompt(engine, query, documents[i]);
            streams.push_back(engine.submit_score(std::move(ids), truncate, priority, second));
        }
        for (size_t i = 0; i < streams.size(); ++i) {
            streams[i]->wait_engine_done();
            RequestStream::Result result = streams[i]->result();
            if (result.status != VLLM_OK)
                throw Error(result.status, "pair " + std::to_string(i) + ": " + result.error);
            out.prompt_tokens += result.prompt_tokens;
            out.scores.push_back(result.embedding.at(0));
        }
    } catch (...) {
        for (auto& s : streams) s->cancel();
        throw;
    }
    return out;
}

// vLLM's scoring of an embedding model: the cosine similarity of the two
// normalised embeddings.
Scores score_with_embeddings(Engine& engine, const std::vector<std::string>& queries,
                             const std::vector<std::string>& documents, int32_t truncate, int32_t priority) {
    std::vector<CompletionPrompt> inputs;
    for (const std::vector<std::string>* texts : {&queries, &documents})
        for (const std::string& t : *texts) {
            CompletionPrompt p;
            p.is_text = true;
            p.text = t;
            inputs.push_back(std::move(p));
        }
    PoolingParams pooling;
    pooling.normalize = true;
    const Embeddings e = embed_inputs(engine, inputs, pooling, truncate, true, priority);
    Scores out;
    out.prompt_tokens = e.prompt_tokens;
    for (size_t i = 0; i < documents.size(); ++i) {
        const std::vector<float>& q = e.vectors[queries.size() == 1 ? 0 : i];
        const std::vector<float>& d = e.vectors[queries.size() + i];
        out.scores.push_back(static_cast<float>(std::inner_product(q.begin(), q.end(), d.begin(), 0.0)));
    }
    return out;
}

// A string or a list of strings (score's text_1 / text_2); Jina's
// documents may also be {"text": ...} objects.
std::vector<std::string> read_texts(const json::Value& v, const std::string& name) {
    std::vector<std::string> texts;
    if (v.is_string()) {
        texts.push_back(v.as_string());
        return texts;
    }
    if (!v.is_array()) throw_invalid_argument("'" + name + "' must be a string or a list of strings");
    for (size_t i = 0; i < v.items().size(); ++i) {
        const json::Value& item = v.items()[i];
        const std::string where = name + "[" + std::to_string(i) + "]";
        if (item.is_object()) texts.push_back(json::required_string(item, "text", where));
        else texts.push_back(json::read_string(item, where));
    }
    return texts;
}

const json::Value& required(const json::Value& body, const char* a, const char* b) {
    if (const json::Value* v = field(body, a)) return *v;
    if (const json::Value* v = field(body, b)) return *v;
    throw_invalid_argument(std::string("'") + a + "' (or '" + b + "') is required");
}

struct CommonFields {
    std::string model;
    int32_t truncate_prompt_tokens = 0;
    int32_t priority = 0;
};

CommonFields read_common(const json::Value& body, const Engine& engine) {
    CommonFields c;
    if (const json::Value* v = field(body, "model")) c.model = json::read_string(*v, "model");
    if (c.model.empty()) c.model = engine.model_name();
    if (const json::Value* v = field(body, "truncate_prompt_tokens"))
        c.truncate_prompt_tokens =
            json::read_int32_in(*v, "truncate_prompt_tokens", -1, INT32_MAX, "-1 (max_model_len) or a positive integer");
    if (c.truncate_prompt_tokens < 0) c.truncate_prompt_tokens = engine.max_model_len();
    if (const json::Value* v = field(body, "priority"))
        c.priority = json::read_int32_in(*v, "priority", INT32_MIN, INT32_MAX, "a 32-bit integer");
    return c;
}


}  // namespace

Scores score_pairs(Engine& engine, const std::vector<std::string>& queries, const std::vector<std::string>& documents,
                   int32_t truncate_prompt_tokens, int32_t priority) {
    check_texts(queries, "query");
    check_texts(documents, "documents");
    if (queries.size() != 1 && queries.size() != documents.size())
        throw_invalid_argument("'query' has " + std::to_string(queries.size()) + " texts and 'documents' " +
                               std::to_string(documents.size()) + ": give one query or one per document");
    if (engine.serves_score()) return score_with_head(engine, queries, documents, truncate_prompt_tokens, priority);
    if (engine.serves_pooling() && !engine.serves_classify()) return score_with_embeddings(engine, queries, documents, truncate_prompt_tokens, priority);
    throw_invalid_argument("model \"" + engine.model_name() +
                           "\" cannot score: " + (engine.serves_classify() ? std::string("its classification head has ") +
                                                     std::to_string(engine.pooler_config().num_labels) +
                                                     " labels (a cross-encoder's score needs one); use /classify"
                                                : std::string("it was loaded for text generation; load a reranker "
                                                              "with runner pooling and hf_overrides' "
                                                              "classifier_from_token (Qwen3-Reranker), a "
                                                              "cross-encoder, or an embedding model")));
}

std::string run_score_request(Engine& engine, std::string_view request_json) {
    const json::Value body = json::parse_object(request_json, "request");
    const CommonFields common = read_common(body, engine);
    const bool vllm_names = field(body, "text_1") != nullptr || field(body, "text_2") != nullptr;
    const std::vector<std::string> queries =
        read_texts(required(body, vllm_names ? "text_1" : "queries", vllm_names ? "queries" : "text_1"),
                   vllm_names ? "text_1" : "queries");
    const std::vector<std::string> documents =
        read_texts(required(body, vllm_names ? "text_2" : "documents", vllm_names ? "documents" : "text_2"),
                   vllm_names ? "text_2" : "documents");
    const Scores s = score_pairs(engine, queries, documents, common.truncate_prompt_tokens, common.priority);
    json::Value data = json::Value::array();
    for (size_t i = 0; i < s.scores.size(); ++i) {
        json::Value item = json::Value::object();
        item.set("index", static_cast<int64_t>(i));
        item.set("object", "score");
        item.set("score", static_cast<double>(s.scores[i]));
        data.push_back(std::move(item));
    }
    return render_pooling_list("score", common.model, std::move(data), s.prompt_tokens);
}

std::string run_rerank_request(Engine& engine, std::string_view request_json) {
    const json::Value body = json::parse_object(request_json, "request");
    const CommonFields common = read_common(body, engine);
    const json::Value* query = field(body, "query");
    if (query == nullptr) throw_invalid_argument("'query' is required");
    const std::vector<std::string> queries{json::read_string(*query, "query")};
    const json::Value* docs = field(body, "documents");
    if (docs == nullptr) throw_invalid_argument("'documents' is required");
    json::require_array(*docs, "documents");
    const std::vector<std::string> documents = read_texts(*docs, "documents");
    int32_t top_n = 0;  // 0: all, as vLLM
    if (const json::Value* v = field(body, "top_n"))
        top_n = json::read_int32_in(*v, "top_n", 0, INT32_MAX, "a non-negative integer (0: every document)");
    bool return_documents = true;  // Jina's default
    if (const json::Value* v = field(body, "return_documents")) return_documents = json::read_bool(*v, "return_documents");
    const Scores s = score_pairs(engine, queries, documents, common.truncate_prompt_tokens, common.priority);
    std::vector<size_t> order(s.scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.scores[a] > s.scores[b]; });
    if (top_n > 0 && static_cast<size_t>(top_n) < order.size()) order.resize(top_n);
    json::Value results = json::Value::array();
    for (size_t i : order) {
        json::Value item = json::Value::object();
        item.set("index", static_cast<int64_t>(i));
        if (return_documents) {
            json::Value doc = json::Value::object();
            doc.set("text", documents[i]);
            item.set("document", std::move(doc));
        }
        item.set("relevance_score", static_cast<double>(s.scores[i]));
        results.push_back(std::move(item));
    }
    json::Value out = json::Value::object();
    out.set("id", "rerank-" + random_alphanumeric(32));
    out.set("model", common.model);
    out.set("usage", pooling_usage(s.prompt_tokens));
    out.set("results", std::move(results));
    return json::dump(out);
}

}  // namespace vllm::chat
