#include "chat/pooling_service.h"

#include "chat/classify_service.h"
#include "chat/embedding_service.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

// One answer's `data`: floats as JSON numbers, rows of `width` as a list
// of lists (width 0: one flat list), or base64 of the float32 bytes.
json::Value render_floats(const std::vector<float>& values, size_t width, bool base64) {
    if (base64) return json::Value(base64_encode(values.data(), values.size() * sizeof(float)));
    json::Value out = json::Value::array();
    if (width == 0) {
        for (float x : values) out.push_back(static_cast<double>(x));
        return out;
    }
    for (size_t first = 0; first + width <= values.size(); first += width) {
        json::Value row = json::Value::array();
        for (size_t i = first; i < first + width; ++i) row.push_back(static_cast<double>(values[i]));
        out.push_back(std::move(row));
    }
    return out;
}

}  // namespace

std::string run_pooling_request(Engine& engine, std::string_view request_json) {
    const EmbeddingRequest request = parse_embedding_request(request_json);
    const json::Value body = json::parse_object(request_json, "request");
    std::string task = engine.serves_classify() ? "classify" : "embed";
    if (const json::Value* v = json::field(body, "task")) task = json::read_string(*v, "task");
    Embeddings result;
    size_t width = 0;
    if (task == "embed") {
        result = embed_inputs(engine, request.inputs, request.pooling, request.truncate_prompt_tokens,
                              request.add_special_tokens, request.priority);
    } else if (task == "token_embed") {
        engine.check_pooling_request(request.pooling);
        width = static_cast<size_t>(
            token_row_width(engine.pooler_config().token, engine.embedding_size(), request.pooling.dimensions));
        result = pool_inputs(engine, request.inputs, request.truncate_prompt_tokens, request.add_special_tokens,
                             [&](std::vector<int32_t> ids, int32_t keep) {
                                 return engine.submit_token_pooling(std::move(ids), request.pooling, keep,
                                                                    request.priority);
                             });
    } else if (task == "classify") {
        Classifications c = classify_inputs(engine, request.inputs, request.truncate_prompt_tokens,
                                            request.add_special_tokens, request.priority);
        result.vectors = std::move(c.probs);
        result.prompt_tokens = c.prompt_tokens;
    } else {
        throw_invalid_argument("'task' must be embed, token_embed or classify (got '" + task +
                               "'; score has its own route, /score; token_classify is not supported)");
    }
    json::Value data = json::Value::array();
    for (size_t i = 0; i < result.vectors.size(); ++i) {
        json::Value item = json::Value::object();
        item.set("index", static_cast<int64_t>(i));
        item.set("object", "pooling");
        item.set("data", render_floats(result.vectors[i], width, request.base64));
        data.push_back(std::move(item));
    }
    return render_pooling_list("pool", request.model.empty() ? engine.model_name() : request.model, std::move(data),
                               result.prompt_tokens);
}

}  // namespace vllm::chat
