#include "tokenizer/bpe_tokenizer.h"

#include "tokenizer/token_pieces.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace vllm {

BpeTokenizer::BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec)
    : Tokenizer(std::move(data)),
      pretokenizer_(spec.kind),
      ignore_merges_(spec.ignore_merges),
      bpe_(data_.tokens, split_gguf_merges(data_.merges)) {
    set_pieces(byte_level_to_bytes);
}

BpeTokenizer::BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec, const std::vector<MergePair>& merges,
                           AddedVocabulary added)
    : Tokenizer(std::move(data), std::move(added)),
      pretokenizer_(spec.kind),
      ignore_merges_(spec.ignore_merges),
      bpe_(data_.tokens, merges) {
    set_pieces(byte_level_to_bytes);
}

void BpeTokenizer::encode_text(const std::string& text, bool, std::vector<int32_t>& out) const {
    std::string normalized;
    std::vector<Word> words;
    pretokenizer_.split(text, normalized, words);
    BpeScratch scratch;
    std::string symbols;
    for (const Word& w : words) {
        const char* bytes = normalized.data() + w.begin;
        const size_t n = w.end - w.begin;
        if (ignore_merges_) {
            symbols.clear();
            for (size_t i = 0; i < n; ++i) utf8::append(symbols, byte_to_codepoint(static_cast<uint8_t>(bytes[i])));
            const int32_t id = bpe_.find_token(symbols);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        bpe_.encode_word(bytes, n, scratch, out);
    }
}

}  // namespace vllm
