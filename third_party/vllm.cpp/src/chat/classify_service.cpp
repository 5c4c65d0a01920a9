#include "chat/classify_service.h"

#include <algorithm>

#include "chat/embedding_service.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

using json::field;

Classifications classify_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs,
                                int32_t truncate_prompt_tokens, bool add_special_tokens, int32_t priority) {
    // Refused before any input is read: a model without a head names the task.
    if (!engine.serves_classify())
        throw_invalid_argument("model \"" + engine.model_name() +
                               "\" cannot classify: it has no classification head (vLLM's classify task needs a "
                               "*ForSequenceClassification model, e.g. a BERT or XLM-RoBERTa classifier)");
    Embeddings rows = pool_inputs(engine, inputs, truncate_prompt_tokens, add_special_tokens,
                                  [&](std::vector<int32_t> ids, int32_t keep) {
                                      return engine.submit_classify(std::move(ids), keep, priority);
                                  });
    return {std::move(rows.vectors), rows.prompt_tokens};
}

std::string run_classify_request(Engine& engine, std::string_view request_json) {
    // The embeddings body's input and options (its embedding-only fields are not read).
    const json::Value body = json::parse_object(request_json, "request");
    std::string model = engine.model_name();
    if (const json::Value* v = field(body, "model")) model = json::read_string(*v, "model");
    if (model.empty()) model = engine.model_name();
    const std::vector<CompletionPrompt> inputs = read_prompt_inputs(body, "input");
    int32_t truncate = 0, priority = 0;
    bool add_special_tokens = true;
    if (const json::Value* v = field(body, "truncate_prompt_tokens"))
        truncate = json::read_int32_in(*v, "truncate_prompt_tokens", -1, INT32_MAX, "-1 (max_model_len) or a positive integer");
    if (const json::Value* v = field(body, "add_special_tokens"))
        add_special_tokens = json::read_bool(*v, "add_special_tokens");
    if (const json::Value* v = field(body, "priority"))
        priority = json::read_int32_in(*v, "priority", INT32_MIN, INT32_MAX, "a 32-bit integer");
    const Classifications result = classify_inputs(engine, inputs, truncate, add_special_tokens, priority);
    const std::vector<std::string>& labels = engine.pooler_config().labels;
    json::Value data = json::Value::array();
    for (size_t i = 0; i < result.probs.size(); ++i) {
        const std::vector<float>& p = result.probs[i];
        const size_t best = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
        json::Value item = json::Value::object();
        item.set("index", static_cast<int64_t>(i));
        item.set("label", best < labels.size() ? labels[best] : "LABEL_" + std::to_string(best));
        json::Value probs = json::Value::array();
        for (float x : p) probs.push_back(static_cast<double>(x));
        item.set("probs", std::move(probs));
        item.set("num_classes", static_cast<int64_t>(p.size()));
        data.push_back(std::move(item));
    }
    return render_pooling_list("classify", model, std::move(data), result.prompt_tokens);
}

}  // namespace vllm::chat
