// BERT's text normalization and word splitting, as Hugging Face
// `tokenizers` does it (BertNormalizer, BertPreTokenizer) and as llama.cpp
// preprocesses a "bert" GGUF's text (its WPM tokenizer), for the WordPiece
// tokenizer (wordpiece_tokenizer.h).
#pragma once
#include <string>
#include <vector>

namespace vllm {

struct BertNormalizerOptions {
    bool clean_text = true;            // drop NUL, U+FFFD and control characters; whitespace becomes ' '
    bool handle_chinese_chars = true;  // a space on each side of a CJK ideograph (a word of its own)
    bool strip_accents = true;         // NFD, then the marks dropped
    bool lowercase = true;
    // llama.cpp's variant: strip_accents drops every mark (\p{M}, not just
    // \p{Mn}) and U+0130 lowercases to "i" alone (Hugging Face: "i" U+0307).
    bool llama_cpp = false;
};

// The normalized text (invalid UTF-8 decodes to U+FFFD first, which
// clean_text then drops).
std::string bert_normalize(const std::string& text, const BertNormalizerOptions& options);

// BertPreTokenizer: words split at whitespace (dropped); each punctuation
// character (ASCII punctuation or \p{P}) is a word of its own.
void bert_pre_tokenize(const std::string& text, std::vector<std::string>& words);

}  // namespace vllm
