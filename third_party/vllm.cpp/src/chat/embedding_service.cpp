#include "chat/embedding_service.h"

#include <chrono>
#include <cstring>
#include <memory>

#include "chat/openai_protocol.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/json_fields.h"
#include "util/utf8.h"

namespace vllm::chat {

namespace {

using json::field;

// OpenAI's encoding_format "base64": the vector's float32 bytes (little
// endian, as numpy's tobytes writes them on the hosts we build for), in
// standard base64.
std::string base64_floats(const std::vector<float>& v) { return base64_encode(v.data(), v.size() * sizeof(float)); }

std::string input_name(size_t i, size_t n) { return n == 1 ? "input" : "input[" + std::to_string(i) + "]"; }

}  // namespace

EmbeddingRequest parse_embedding_request(std::string_view request_json) {
    const json::Value body = json::parse_object(request_json, "request");
    EmbeddingRequest r;
    if (const json::Value* v = field(body, "model")) r.model = json::read_string(*v, "model");
    r.inputs = read_prompt_inputs(body, "input");
    if (const json::Value* v = field(body, "encoding_format")) {
        const std::string& format = json::read_string(*v, "encoding_format");
        if (format != "float" && format != "base64")
            throw_invalid_argument("'encoding_format' must be float or base64 (got '" + format + "')");
        r.base64 = format == "base64";
    }
    if (const json::Value* v = field(body, "dimensions"))
        r.pooling.dimensions = json::read_int32_in(*v, "dimensions", 1, INT32_MAX, "a positive integer");
    if (const json::Value* v = field(body, "normalize")) r.pooling.normalize = json::read_bool(*v, "normalize");
    if (const json::Value* v = field(body, "truncate_prompt_tokens"))
        r.truncate_prompt_tokens =
            json::read_int32_in(*v, "truncate_prompt_tokens", -1, INT32_MAX, "-1 (max_model_len) or a positive integer");
    if (const json::Value* v = field(body, "add_special_tokens"))
        r.add_special_tokens = json::read_bool(*v, "add_special_tokens");
    if (const json::Value* v = field(body, "priority"))
        r.priority = json::read_int32_in(*v, "priority", INT32_MIN, INT32_MAX, "a 32-bit integer");
    return r;
}

Embeddings embed_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs, const PoolingParams& pooling,
                        int32_t truncate_prompt_tokens, bool add_special_tokens, int32_t priority) {
    if (inputs.empty()) throw_invalid_argument("'input' must not be empty");
    engine.check_pooling_request(pooling);
    return pool_inputs(engine, inputs, truncate_prompt_tokens, add_special_tokens,
                       [&](std::vector<int32_t> ids, int32_t keep) {
                           return engine.submit_pooling(std::move(ids), pooling, keep, priority);
                       });
}

Embeddings pool_inputs(Engine& engine, const std::vector<CompletionPrompt>& inputs, int32_t truncate_prompt_tokens,
                       bool add_special_tokens, const SubmitPooled& submit) {
    if (inputs.empty()) throw_invalid_argument("'input' must not be empty");
    if (truncate_prompt_tokens > engine.max_model_len())
        throw_invalid_argument("'truncate_prompt_tokens' " + std::to_string(truncate_prompt_tokens) +
                               " is greater than max_model_len " + std::to_string(engine.max_model_len()));
    const int32_t keep = truncate_prompt_tokens < 0 ? engine.max_model_len() : truncate_prompt_tokens;
    // Everything checked before anything runs: one bad input fails the call alone.
    std::vector<std::vector<int32_t>> ids(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string name = input_name(i, inputs.size());
        if (inputs[i].is_text) {
            if (!utf8::is_valid(inputs[i].text)) throw_invalid_argument("'" + name + "' is not valid UTF-8");
            ids[i] = engine.tokenizer().encode(inputs[i].text, add_special_tokens, /*parse_special=*/true);
        } else {
            ids[i] = inputs[i].ids;
        }
        if (ids[i].empty())
            throw_invalid_argument("'" + name + "' has no tokens (an empty string, and this model adds none)");
    }
    std::vector<std::shared_ptr<RequestStream>> streams;
    auto cancel_all = [&] {
        for (auto& s : streams) s->cancel();
    };
    Embeddings out;
    try {
        for (size_t i = 0; i < ids.size(); ++i) {
            try {
                streams.push_back(submit(std::move(ids[i]), keep));
            } catch (const Error& e) {
                if (inputs.size() == 1) throw;
                throw Error(e.status(), input_name(i, inputs.size()) + ": " + e.what());
            }
        }
        for (size_t i = 0; i < streams.size(); ++i) {
            streams[i]->wait_engine_done();
            RequestStream::Result result = streams[i]->result();
            if (result.status != VLLM_OK)
                throw Error(result.status, inputs.size() == 1 ? result.error
                                                              : input_name(i, inputs.size()) + ": " + result.error);
            out.prompt_tokens += result.prompt_tokens;
            out.vectors.push_back(std::move(result.embedding));
        }
    } catch (...) {
        cancel_all();
        throw;
    }
    return out;
}

std::string run_embeddings_request(Engine& engine, std::string_view request_json) {
    const EmbeddingRequest request = parse_embedding_request(request_json);
    const Embeddings result = embed_inputs(engine, request.inputs, request.pooling, request.truncate_prompt_tokens,
                                           request.add_special_tokens, request.priority);
    json::Value data = json::Value::array();
    for (size_t i = 0; i < result.vectors.size(); ++i) {
        json::Value item = json::Value::object();
        item.set("index", static_cast<int64_t>(i));
        item.set("object", "embedding");
        if (request.base64) {
            item.set("embedding", base64_floats(result.vectors[i]));
        } else {
            json::Value values = json::Value::array();
            for (float x : result.vectors[i]) values.push_back(static_cast<double>(x));
            item.set("embedding", std::move(values));
        }
        data.push_back(std::move(item));
    }
    return render_pooling_list("embd", request.model.empty() ? engine.model_name() : request.model, std::move(data),
                               result.prompt_tokens);
}

json::Value pooling_usage(int64_t prompt_tokens) {
    json::Value usage = json::Value::object();
    usage.set("prompt_tokens", prompt_tokens);
    usage.set("total_tokens", prompt_tokens);
    return usage;
}

std::string render_pooling_list(const std::string& id_prefix, const std::string& model, json::Value data,
                                int64_t prompt_tokens) {
    json::Value out = json::Value::object();
    out.set("id", id_prefix + "-" + random_alphanumeric(32));
    out.set("object", "list");
    out.set("created", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count()));
    out.set("model", model);
    out.set("data", std::move(data));
    out.set("usage", pooling_usage(prompt_tokens));
    return json::dump(out);
}

}  // namespace vllm::chat
