// The tokenizer.json normalizers this engine has, applied in the file's
// order to each piece of text between added tokens (and to the texts of
// normalized added tokens, which then match the normalized input).
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bert_normalizer.h"

namespace vllm {

class HfNormalizer {
public:
    enum class Step {
        NFC,                // Unicode NFC (invalid UTF-8 bytes become U+FFFD first)
        PREPEND_METASPACE,  // Prepend "▁" to a non-empty text
        REPLACE_SPACES,     // Replace " " -> "▁"
        BERT,               // BertNormalizer (the options add_bert gave)
    };

    void add(Step step) { steps_.push_back(step); }
    void add_bert(const BertNormalizerOptions& options) {
        bert_ = options;
        steps_.push_back(Step::BERT);
    }
    bool has(Step step) const;
    std::string apply(const std::string& text) const;

private:
    std::vector<Step> steps_;
    BertNormalizerOptions bert_;
};

}  // namespace vllm
