#include "api/output_json.h"

namespace vllm::api {

namespace {

json::Value logprob_entry(const Tokenizer& tokenizer, int32_t token, float logprob) {
    json::Value entry = json::Value::object();
    entry.set("token_id", static_cast<int64_t>(token));
    json::Value bytes = json::Value::array();
    for (unsigned char c : tokenizer.token_bytes(token, /*skip_special=*/false)) bytes.push_back(static_cast<int>(c));
    entry.set("bytes", std::move(bytes));
    entry.set("logprob", finite_logprob(logprob));
    return entry;
}

}  // namespace

json::Value logprob_entries(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& sampled) {
    json::Value entries = json::Value::array();
    for (const TokenLogprob& token_logprob : sampled) {
        json::Value entry = logprob_entry(tokenizer, token_logprob.token, token_logprob.logprob);
        if (token_logprob.rank > 0) entry.set("rank", static_cast<int64_t>(token_logprob.rank));
        json::Value top = json::Value::array();
        for (const auto& [token, logprob] : token_logprob.top) top.push_back(logprob_entry(tokenizer, token, logprob));
        entry.set("top_logprobs", std::move(top));
        entries.push_back(std::move(entry));
    }
    return entries;
}

json::Value prompt_logprob_entries(const Tokenizer& tokenizer, const std::vector<TokenLogprob>& entries) {
    json::Value prompt = logprob_entries(tokenizer, entries);
    prompt.items().insert(prompt.items().begin(), json::Value());
    return prompt;
}

std::string output_json(const Tokenizer& tokenizer, const RequestStream::Result& result, bool logprobs) {
    json::Value out = json::Value::object();
    json::Value ids = json::Value::array();
    for (int32_t id : result.output_tokens) ids.push_back(static_cast<int64_t>(id));
    out.set("token_ids", std::move(ids));
    // null without logprobs
    out.set("logprobs", logprobs ? logprob_entries(tokenizer, result.logprobs) : json::Value());
    if (result.prompt_logprobs) out.set("prompt_logprobs", prompt_logprob_entries(tokenizer, *result.prompt_logprobs));
    return json::dump(out);
}

}  // namespace vllm::api
