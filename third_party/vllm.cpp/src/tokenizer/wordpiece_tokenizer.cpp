#include "tokenizer/wordpiece_tokenizer.h"

#include <algorithm>

#include "tokenizer/token_pieces.h"
#include "util/error.h"

namespace vllm {

namespace {

const char kMetaspace[] = "\xE2\x96\x81";  // U+2581
const char kContinuation[] = "##";

size_t utf8_length(const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Hugging Face's "##piece" is "piece"; any other piece starts a word.
std::string hf_piece_bytes(const std::string& text) {
    if (text.compare(0, 2, kContinuation) == 0) return text.substr(2);
    return " " + text;
}

void require_unknown_token(const TokenizerData& data) {
    if (data.unk_id < 0) throw_model_load("the WordPiece tokenizer has no unknown token (unk_token / unknown_token_id)");
}

BertNormalizerOptions gguf_normalizer(const TokenizerData& data) {
    BertNormalizerOptions o;
    o.lowercase = data.lowercase;
    o.strip_accents = data.strip_accents;
    o.llama_cpp = true;
    return o;
}

}  // namespace

WordPieceModel::WordPieceModel(const std::vector<std::string>& tokens, std::string start_prefix,
                               std::string continuation_prefix, int32_t unk_id, size_t max_word_chars)
    : start_prefix_(std::move(start_prefix)),
      continuation_prefix_(std::move(continuation_prefix)),
      unk_id_(unk_id),
      max_word_chars_(max_word_chars) {
    ids_.reserve(tokens.size());
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (tokens[id].empty()) continue;
        ids_[tokens[id]] = static_cast<int32_t>(id);  // a repeated text: the last id, as llama.cpp keeps it
        max_piece_bytes_ = std::max(max_piece_bytes_, tokens[id].size());
    }
}

int32_t WordPieceModel::find(const std::string& key) const {
    auto it = ids_.find(key);
    return it == ids_.end() ? -1 : it->second;
}

void WordPieceModel::encode_word(const std::string& word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    const size_t first = out.size();
    if (max_word_chars_ == 0 || utf8_length(word) <= max_word_chars_) {
        std::string key;
        size_t start = 0;
        while (start < word.size()) {
            const std::string& prefix = start == 0 ? start_prefix_ : continuation_prefix_;
            // The longest piece first: ends step back one code point at a time.
            size_t end = std::min(word.size(), start + (max_piece_bytes_ > prefix.size() ? max_piece_bytes_ - prefix.size() : 0));
            while (end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
            int32_t id = -1;
            while (end > start) {
                key.assign(prefix).append(word, start, end - start);
                id = find(key);
                if (id >= 0) break;
                do {
                    --end;
                } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
            }
            if (id < 0) break;
            out.push_back(id);
            start = end;
        }
        if (start == word.size()) return;
    }
    out.resize(first);
    out.push_back(unk_id_);
}

WordPieceTokenizer::WordPieceTokenizer(TokenizerData data)
    : Tokenizer(std::move(data)),
      from_gguf_(true),
      normalizer_(gguf_normalizer(data_)),
      model_(data_.tokens, kMetaspace, "", data_.unk_id, 0) {
    require_unknown_token(data_);
    set_pieces(metaspace_to_spaces);
}

WordPieceTokenizer::WordPieceTokenizer(TokenizerData data, AddedVocabulary added, size_t max_word_chars)
    : Tokenizer(std::move(data), std::move(added)),
      from_gguf_(false),
      model_(data_.tokens, "", kContinuation, data_.unk_id, max_word_chars) {
    require_unknown_token(data_);
    set_pieces(hf_piece_bytes);
}

void WordPieceTokenizer::encode_text(const std::string& text, bool, std::vector<int32_t>& out) const {
    std::vector<std::string> words;
    bert_pre_tokenize(from_gguf_ ? bert_normalize(text, normalizer_) : text, words);
    for (const std::string& word : words) model_.encode_word(word, out);
}

}  // namespace vllm
