// The tokenizer.json normalizers this engine has, applied in the file's
// order to each piece of text between added tokens (and to the texts of
// normalized added tokens, which then match the normalized input).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/precompiled_charsmap.h"

namespace vllm {

class HfNormalizer {
public:
    enum class Step {
        NFC,                // Unicode NFC (invalid UTF-8 bytes become U+FFFD first)
        PREPEND_METASPACE,  // Prepend "▁" to a non-empty text
        REPLACE_SPACES,     // Replace " " -> "▁"
        BERT,               // BertNormalizer (the options add_bert gave)
        PRECOMPILED,        // SentencePiece's precompiled charsmap (add_precompiled)
        REPLACE_LITERAL,    // Replace a string by another (add_replace)
        COLLAPSE_SPACES,    // Replace Regex " {2,}" by a string (add_collapse_spaces)
    };

    void add(Step step) { steps_.push_back(step); }
    void add_bert(const BertNormalizerOptions& options) {
        bert_ = options;
        steps_.push_back(Step::BERT);
    }
    void add_precompiled(std::shared_ptr<const PrecompiledCharsmap> charsmap) {
        charsmap_ = std::move(charsmap);
        steps_.push_back(Step::PRECOMPILED);
    }
    void add_replace(std::string from, std::string to) {
        literals_.emplace_back(std::move(from), std::move(to));
        steps_.push_back(Step::REPLACE_LITERAL);
    }
    void add_collapse_spaces(std::string to) {
        collapsed_to_ = std::move(to);
        steps_.push_back(Step::COLLAPSE_SPACES);
    }
    bool has(Step step) const;
    std::string apply(const std::string& text) const;

private:
    std::vector<Step> steps_;
    BertNormalizerOptions bert_;
    std::shared_ptr<const PrecompiledCharsmap> charsmap_;
    std::vector<std::pair<std::string, std::string>> literals_;  // REPLACE_LITERAL steps in order
    std::string collapsed_to_;
};

}  // namespace vllm
