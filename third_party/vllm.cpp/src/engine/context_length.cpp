// The prompt-fits-the-context check (see context_length.h).
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

}  // namespace vllm
