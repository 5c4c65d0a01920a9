#include "chat/choice_logprobs.h"

#include "util/utf8.h"

namespace vllm::chat {

namespace {

// Python's bytes.decode("utf-8", errors="replace"): each maximal ill-formed
// subpart (or a sequence cut off by the end) becomes one U+FFFD.
std::string replacing_decode(const std::string& bytes) {
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
        const utf8::Step step = utf8::step(bytes, i);
        if (step.status == utf8::Status::VALID) out.append(bytes, i, step.length);
        else out += "\xEF\xBF\xBD";
        i += step.length;
    }
    return out;
}

// Characters (code points) of well-formed UTF-8 text.
size_t code_points(const std::string& text) {
    size_t n = 0;
    for (const unsigned char c : text) n += (c & 0xC0) != 0x80;
    return n;
}

json::Value number_or_null(const vllm::TokenLogprob* entry) {
    return entry == nullptr ? json::Value() : json::Value(finite_logprob(entry->logprob));
}

}  // namespace

std::string TokenNaming::bytes(int32_t token) const {
    return as_token_ids_ ? "token_id:" + std::to_string(token) : tokenizer_.token_bytes(token, /*skip_special=*/false);
}

std::string TokenNaming::text(int32_t token) const {
    return as_token_ids_ ? "token_id:" + std::to_string(token) : replacing_decode(bytes(token));
}

std::vector<TokenLogprob> chat_logprobs(const std::vector<vllm::TokenLogprob>& engine_logprobs,
                                        const Tokenizer& tokenizer, bool as_token_ids) {
    const TokenNaming naming(tokenizer, as_token_ids);
    std::vector<TokenLogprob> out;
    out.reserve(engine_logprobs.size());
    for (const vllm::TokenLogprob& sampled : engine_logprobs) {
        TokenLogprob entry;
        entry.token = naming.bytes(sampled.token);
        entry.logprob = sampled.logprob;
        for (const auto& [token, logprob] : sampled.top) entry.top_logprobs.push_back({naming.bytes(token), logprob});
        out.push_back(std::move(entry));
    }
    return out;
}

json::Value legacy_logprobs(const std::vector<std::string>& unpredicted,
                            const std::vector<vllm::TokenLogprob>& entries, const TokenNaming& naming,
                            size_t& text_offset) {
    json::Value tokens = json::Value::array();
    json::Value token_logprobs = json::Value::array();
    json::Value top_logprobs = json::Value::array();
    json::Value offsets = json::Value::array();
    const auto add = [&](const std::string& name, const vllm::TokenLogprob* entry) {
        offsets.push_back(static_cast<int64_t>(text_offset));
        text_offset += code_points(name);
        tokens.push_back(name);
        token_logprobs.push_back(number_or_null(entry));
        if (entry == nullptr) {
            top_logprobs.push_back(json::Value());
            return;
        }
        // {name: logprob}: a name given twice keeps its first place, its last value (a dict's rule).
        json::Value top = json::Value::object();
        for (const auto& [token, logprob] : entry->top) top.set(naming.text(token), finite_logprob(logprob));
        top_logprobs.push_back(std::move(top));
    };
    for (const std::string& name : unpredicted) add(name, nullptr);
    for (const vllm::TokenLogprob& entry : entries) add(naming.text(entry.token), &entry);
    json::Value out = json::Value::object();
    out.set("tokens", std::move(tokens));
    out.set("token_logprobs", std::move(token_logprobs));
    out.set("top_logprobs", std::move(top_logprobs));
    out.set("text_offset", std::move(offsets));
    return out;
}

json::Value prompt_logprobs_json(const std::vector<vllm::TokenLogprob>& entries, const Tokenizer& tokenizer) {
    const auto shown = [&](int32_t token, float logprob, int32_t rank) {
        json::Value v = json::Value::object();
        v.set("logprob", finite_logprob(logprob));
        v.set("rank", rank > 0 ? json::Value(static_cast<int64_t>(rank)) : json::Value());
        v.set("decoded_token", detokenized(tokenizer, {token}));
        return v;
    };
    json::Value out = json::Value::array();
    out.push_back(json::Value());  // the first prompt token: nothing predicts it
    for (const vllm::TokenLogprob& entry : entries) {
        json::Value position = json::Value::object();
        position.set(std::to_string(entry.token), shown(entry.token, entry.logprob, entry.rank));
        int32_t rank = 0;
        for (const auto& [token, logprob] : entry.top) {
            ++rank;
            const std::string key = std::to_string(token);
            if (position.find(key) == nullptr) position.set(key, shown(token, logprob, rank));
        }
        out.push_back(std::move(position));
    }
    return out;
}

std::string detokenized(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
    IncrementalDetokenizer detokenizer(tokenizer, /*skip_special_tokens=*/false);
    std::string text;
    for (const int32_t id : ids) text += detokenizer.push(id);
    return text + detokenizer.flush();
}

}  // namespace vllm::chat
