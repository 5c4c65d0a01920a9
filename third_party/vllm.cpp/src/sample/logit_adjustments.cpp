#include "sample/logit_adjustments.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "util/error.h"
#include "util/json_fields.h"

namespace vllm {

namespace {

constexpr double kMaxBias = 100.0;  // OpenAI's range

// A logit_bias key: a token id in decimal, as OpenAI's JSON writes the map.
int32_t token_id_key(const std::string& key) {
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long long id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
        throw_invalid_argument("'logit_bias' keys must be token ids (got '" + key + "')");
    return static_cast<int32_t>(id);
}

std::vector<std::pair<int32_t, float>> read_bias(const json::Value& v) {
    if (!v.is_object()) json::wrong_type("logit_bias", "an object of token ids to numbers", v);
    std::vector<std::pair<int32_t, float>> bias;
    for (const auto& [key, value] : v.members()) {
        const std::string name = "logit_bias[\"" + key + "\"]";
        const double b = json::read_number(value, name);
        if (!(b >= -kMaxBias && b <= kMaxBias)) json::out_of_range(name, "in [-100, 100]", b);
        bias.emplace_back(token_id_key(key), static_cast<float>(b));
    }
    std::sort(bias.begin(), bias.end());
    // "5" and "05" name one token.
    for (size_t i = 1; i < bias.size(); ++i)
        if (bias[i].first == bias[i - 1].first)
            throw_invalid_argument("'logit_bias' names token " + std::to_string(bias[i].first) + " twice");
    return bias;
}

std::vector<int32_t> read_allowed(const json::Value& v) {
    std::vector<int32_t> allowed = read_token_ids(v, "allowed_token_ids");
    if (allowed.empty()) throw_invalid_argument("'allowed_token_ids' must not be empty");
    std::sort(allowed.begin(), allowed.end());
    const auto repeated = std::adjacent_find(allowed.begin(), allowed.end());
    if (repeated != allowed.end())
        throw_invalid_argument("'allowed_token_ids' names token " + std::to_string(*repeated) + " twice");
    return allowed;
}

}  // namespace

void check_token_id(int32_t id, int32_t vocab_size, const char* field) {
    if (id >= vocab_size)
        throw_invalid_argument(std::string("'") + field + "' token id " + std::to_string(id) +
                               " is outside the vocabulary (" + std::to_string(vocab_size) + " tokens)");
}

std::vector<int32_t> read_token_ids(const json::Value& v, const std::string& name) {
    if (!v.is_array()) json::wrong_type(name, "an array of token ids", v);
    std::vector<int32_t> ids;
    for (size_t i = 0; i < v.items().size(); ++i) {
        const std::string item = name + "[" + std::to_string(i) + "]";
        const int64_t id = json::read_integer(v.items()[i], item);
        if (id < 0 || id > std::numeric_limits<int32_t>::max()) json::out_of_range(item, "a token id", double(id));
        ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
}

LogitAdjustments LogitAdjustments::from_json(const json::Value& object) {
    LogitAdjustments a;
    if (const json::Value* v = json::field(object, "logit_bias")) a.bias = read_bias(*v);
    if (const json::Value* v = json::field(object, "allowed_token_ids")) a.allowed = read_allowed(*v);
    return a;
}

void LogitAdjustments::check_vocabulary(int32_t vocab_size) const {
    // Both lists are ascending: their last ids are the largest.
    if (!bias.empty()) check_token_id(bias.back().first, vocab_size, "logit_bias");
    if (!allowed.empty()) check_token_id(allowed.back(), vocab_size, "allowed_token_ids");
}

void LogitAdjustments::apply(float* logits, int32_t vocab_size) const {
    if (!allowed.empty()) {
        int32_t next = 0;  // the first id not yet masked
        for (int32_t id : allowed) {
            std::fill(logits + next, logits + id, -INFINITY);
            next = id + 1;
        }
        std::fill(logits + next, logits + vocab_size, -INFINITY);
    }
    for (const auto& [id, b] : bias) logits[id] += b;
}

bool LogitAdjustments::allows(int32_t token) const {
    return allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), token);
}

bool LogitAdjustments::leaves_a_token(const float* logits) const {
    if (allowed.empty()) return true;
    return std::any_of(allowed.begin(), allowed.end(), [&](int32_t id) { return logits[id] > -INFINITY; });
}

}  // namespace vllm
