// The pooling request kind's arithmetic (vLLM's pooler for the embed task):
// a prompt's final hidden rows, taken chunk by chunk as the scheduler runs
// its prefill, pooled into one vector (CLS: the first row, MEAN: the average,
// LAST: the last row), cut to the Matryoshka `dimensions` a request asks for
// and L2-normalised when it asks for that. The engine's pooler config (the
// model's own choice, the pooler_config option over it) says which pooling
// runs; a request picks normalisation and dimensions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vllm {

enum class PoolingType { CLS, MEAN, LAST };

// vLLM's names: "CLS", "MEAN", "LAST" (upper case, as pooler_config takes
// them); INVALID_ARGUMENT naming `field` for another (ALL and STEP are
// refused by name: they return per-token vectors, not one embedding).
PoolingType parse_pooling_type(const std::string& name, const char* field);
const char* pooling_type_name(PoolingType type);
// llama.cpp's `<arch>.pooling_type` numbers (LLAMA_POOLING_TYPE_*): 1 MEAN,
// 2 CLS, 3 LAST; nullopt for NONE (0) and the kinds that are not embeddings.
std::optional<PoolingType> pooling_type_from_gguf(int64_t value);

// How a classification head's logits are activated, as vLLM resolves it
// from the model's config: CLASSIFY, sigmoid for one label and softmax
// over more (PoolerClassify, the default); SIGMOID per label
// (problem_type multi_label_classification); IDENTITY, the raw logits
// (problem_type regression, or a cross-encoder whose sentence-transformers
// activation is Identity, for scores).
enum class ClassifierActivation { CLASSIFY, SIGMOID, IDENTITY };

// vLLM's token pooling (tok_pooling_type) for the token_embed task: ALL,
// every prompt row; STEP, the rows of the prompt's step_tag_id tokens
// (every row when unset), of each only the returned_token_ids columns (all
// when empty), as vLLM's StepPool selects them.
struct TokenPooling {
    bool step = false;
    int32_t step_tag_id = -1;
    std::vector<int32_t> returned_token_ids;
};

// The engine's pooling setup: what every pooling request of it runs.
struct PoolerConfig {
    PoolingType type = PoolingType::LAST;
    bool normalize = true;  // the default of a request that does not say
    // Matryoshka: the model was trained so a prefix of its vector is an
    // embedding too (config.json's is_matryoshka / matryoshka_dimensions);
    // only then may a request ask for `dimensions`.
    bool matryoshka = false;
    std::vector<int32_t> matryoshka_dimensions;  // empty: any size up to the hidden size
    // A score head (vLLM's classifier_from_token): the ids of the false and
    // the true answer token; empty: the engine embeds. A scoring request
    // takes its prompt's last row of logits instead of hidden rows.
    std::vector<int32_t> score_tokens;
    bool qwen3_reranker_prompt = false;  // is_original_qwen3_reranker
    // A classification head (a cross-encoder: BERT's or XLM-RoBERTa's
    // *ForSequenceClassification): its number of labels (0: none) and their
    // names (id2label; LABEL_<i> where the model has none). One label
    // scores (/score, /rerank); any number classifies (/classify).
    int32_t num_labels = 0;
    std::vector<std::string> labels;
    ClassifierActivation classify_activation = ClassifierActivation::CLASSIFY;  // the classify task's
    ClassifierActivation score_activation = ClassifierActivation::CLASSIFY;     // the score task's
    TokenPooling token;  // the token_embed task's
};

// The score of a prompt's last row of logits under a score head: the true
// token's probability in the softmax over the two, i.e.
// sigmoid(logit[true] - logit[false]) (vLLM's from_2_way_softmax, the
// is_original_qwen3_reranker form).
float score_from_logits(const float* logits, const std::vector<int32_t>& score_tokens);

// From a torch.nn.modules class name (sentence-transformers' activation_fn,
// sbert_ce_default_activation_function): Identity, Sigmoid or Softmax
// (CLASSIFY, as vLLM wraps them); INVALID_ARGUMENT naming `field` otherwise.
ClassifierActivation parse_score_activation(const std::string& module, const char* field);
std::vector<float> classifier_probabilities(const float* logits, int num_labels,
                                            ClassifierActivation activation = ClassifierActivation::CLASSIFY);

// vLLM's tok_pooling_type names: "ALL" (false) or "STEP" (true);
// INVALID_ARGUMENT naming `field` for another.
bool parse_step_pooling(const std::string& name, const char* field);

// A token_embed request's answer from its prompt's rows ([n, dim],
// row-major) and ids: the rows ALL or STEP keep, each cut to `dimensions`
// (0: whole) then normalised when asked; row-major, each row
// token_row_width() wide.
std::vector<float> pool_token_rows(const std::vector<float>& rows, int dim, const std::vector<int32_t>& prompt,
                                   const TokenPooling& config, bool normalize, int dimensions);
int token_row_width(const TokenPooling& config, int dim, int dimensions);

// One request's pooling options (vLLM's PoolingParams for embed).
struct PoolingParams {
    std::optional<bool> normalize;  // unset: the engine's default
    int32_t dimensions = 0;         // 0: the whole vector
};

// A prompt's rows pooled as its chunks arrive; a chunk starting at position
// 0 starts over (a preempted request recomputes its prompt).
class PooledRows {
public:
    void add(PoolingType type, const float* rows, int start_pos, int n_rows, int prompt_len, int dim);
    // The pooled vector: dimensions (0: all) then normalisation, as vLLM
    // applies them.
    std::vector<float> finish(PoolingType type, int prompt_len, bool normalize, int dimensions) const;

private:
    std::vector<double> sum_;    // MEAN: the rows' sum so far
    std::vector<float> picked_;  // CLS / LAST: the row
};

// The checks vLLM makes of a request's `dimensions` against the engine
// (INVALID_ARGUMENT naming the field): allowed only for a Matryoshka model,
// within its hidden size and (when it lists them) one of its sizes.
void check_pooling_dimensions(const PoolerConfig& config, int hidden_size, int32_t dimensions,
                              const std::string& model_name);

}  // namespace vllm
