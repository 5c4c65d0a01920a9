#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace vllm {

std::string IncrementalDetokenizer::push(int32_t token) {
    pending_ += tokenizer_.token_bytes(token, skip_special_);
    std::string text;
    const size_t used = append_repaired_utf8(pending_.data(), pending_.size(), false, text);
    pending_.erase(0, used);
    return text;
}

std::string IncrementalDetokenizer::flush() {
    std::string text;
    append_repaired_utf8(pending_.data(), pending_.size(), true, text);
    pending_.clear();
    return text;
}

}  // namespace vllm
