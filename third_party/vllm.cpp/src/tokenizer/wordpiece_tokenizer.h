// The WordPiece tokenizer of BERT-family encoders (all-MiniLM, bge, e5):
// text normalized and split into words as BERT does (bert_normalizer.h),
// then each word cut greedily into the longest vocabulary pieces from its
// start; a word with a part no piece covers (or longer than
// max_word_chars) is one unknown token.
//   - GGUF (tokenizer.ggml.model "bert"), as llama.cpp's converter writes
//     it: a word-start piece is stored as "\u2581piece" and a continuation
//     as the bare text (Hugging Face's "##piece"); normalized as llama.cpp
//     does (tokenizer.ggml.normalizer.lowercase / .strip_accents, default
//     true); [CLS] / [SEP] around the text as add_bos / add_sep say.
//   - tokenizer.json (model WordPiece): the vocabulary as it is, "##" before
//     continuations; the text arrives normalized by the file's
//     BertNormalizer (hf_normalizer.h) and split by its BertPreTokenizer.
// Detokenizing: a continuation piece is its text, any other piece the text
// after a space (the "##" rule; a space before punctuation is kept, as
// llama.cpp's per-token pieces keep it).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

// The greedy longest-match over a vocabulary: a word's first piece is
// looked up as start_prefix + text, the others as continuation_prefix + text.
class WordPieceModel {
public:
    WordPieceModel(const std::vector<std::string>& tokens, std::string start_prefix, std::string continuation_prefix,
                   int32_t unk_id, size_t max_word_chars);
    void encode_word(const std::string& word, std::vector<int32_t>& out) const;

private:
    int32_t find(const std::string& key) const;

    std::unordered_map<std::string, int32_t> ids_;
    std::string start_prefix_;
    std::string continuation_prefix_;
    int32_t unk_id_;
    size_t max_word_chars_;  // 0: no limit
    size_t max_piece_bytes_ = 0;
};

class WordPieceTokenizer final : public Tokenizer {
public:
    // From GGUF metadata (llama.cpp's form).
    explicit WordPieceTokenizer(TokenizerData data);
    // From a tokenizer.json: continuations start with "##" (the loader
    // refuses another prefix); max_word_chars is max_input_chars_per_word.
    WordPieceTokenizer(TokenizerData data, AddedVocabulary added, size_t max_word_chars);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;

    bool from_gguf_;
    BertNormalizerOptions normalizer_;  // GGUF only: tokenizer.json text comes normalized
    WordPieceModel model_;
};

}  // namespace vllm
