// The checks of a prompt before it runs (see context_length.h).
#include "engine/context_length.h"

#include <string>

#include "util/error.h"

namespace vllm {

void check_prompt_fits(size_t prompt_tokens, int max_model_len) {
    if (prompt_tokens <= static_cast<size_t>(max_model_len)) return;
    throw_invalid_argument("This model's maximum context length is " + std::to_string(max_model_len) +
                           " tokens. However, your request has " + std::to_string(prompt_tokens) +
                           " input tokens. Please reduce the length of the input messages.");
}

void check_prompt_ids(const std::vector<int32_t>& ids, int vocab_size, int max_model_len) {
    if (ids.empty()) throw_invalid_argument("prompt is empty (it encodes to no tokens)");
    if (max_model_len > 0) check_prompt_fits(ids.size(), max_model_len);
    for (const int32_t id : ids)
        if (id < 0 || id >= vocab_size)
            throw_invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
}

}  // namespace vllm
