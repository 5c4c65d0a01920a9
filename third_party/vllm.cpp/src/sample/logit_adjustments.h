// A request's own edits of its logits row: OpenAI's `logit_bias` (a number
// in [-100, 100] added to a token's logit) and vLLM's `allowed_token_ids`
// (every other token masked). Read from the same JSON fields by the chat
// request and by vllm_request_submit_with_options' options; applied by the
// engine to every row it samples or verifies, after the min_tokens and
// grammar masks and before the host's logits processor and the penalties
// (vLLM's order: its logit-bias processor runs before the penalties).
// Log-probabilities stay those of the raw row, as vLLM reports them.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/json.h"

namespace vllm {

struct LogitAdjustments {
    std::vector<std::pair<int32_t, float>> bias;  // ascending token ids, each once
    std::vector<int32_t> allowed;                 // ascending, each once; empty: every token

    bool empty() const { return bias.empty() && allowed.empty(); }

    // The object's "logit_bias" and "allowed_token_ids" (absent or null: not
    // set). INVALID_ARGUMENT naming the field for a key that is not a token
    // id, a bias that is not a number in [-100, 100], an empty or non-array
    // allowed_token_ids, an id that is negative or repeated.
    static LogitAdjustments from_json(const json::Value& object);

    // INVALID_ARGUMENT naming the field for a token id at or past vocab_size.
    void check_vocabulary(int32_t vocab_size) const;

    // Masks, then adds the biases, in place (the ids are checked).
    void apply(float* logits, int32_t vocab_size) const;

    // Whether `token` may be generated at all (allowed_token_ids, when set,
    // names it): jump-forward appends only such tokens.
    bool allows(int32_t token) const;

    // Whether any allowed token is still possible in a row apply() edited
    // (always, without allowed_token_ids: a bias never masks).
    bool leaves_a_token(const float* logits) const;
};

// A JSON array of token ids (integers 0..INT32_MAX), in order;
// INVALID_ARGUMENT naming `name` or the element otherwise.
std::vector<int32_t> read_token_ids(const json::Value& v, const std::string& name);

// INVALID_ARGUMENT "'<field>' token id <id> is outside the vocabulary" for
// an id at or past vocab_size.
void check_token_id(int32_t id, int32_t vocab_size, const char* field);

}  // namespace vllm
