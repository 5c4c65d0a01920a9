#include "tokenizer/metaspace_bpe_tokenizer.h"

#include "tokenizer/token_pieces.h"

namespace vllm {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581

}  // namespace

MetaspaceBpeTokenizer::MetaspaceBpeTokenizer(TokenizerData data, const std::vector<MergePair>& merges,
                                             AddedVocabulary added, const MetaspaceOptions& options)
    : Tokenizer(std::move(data), std::move(added)), bpe_(data_.tokens, merges), options_(options) {
    set_pieces(metaspace_to_spaces);
}

MetaspaceBpeTokenizer::MetaspaceBpeTokenizer(TokenizerData data, const MetaspaceOptions& options)
    : Tokenizer(std::move(data)), bpe_(data_.tokens, split_gguf_merges(data_.merges)), options_(options) {
    set_pieces(metaspace_to_spaces);
}

void MetaspaceBpeTokenizer::encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    std::string normalized = spaces_to_metaspace(text);
    const bool wanted = options_.prepend == MetaspaceOptions::Prepend::ALWAYS ||
                        (options_.prepend == MetaspaceOptions::Prepend::FIRST && at_start);
    const bool escaped = normalized.compare(0, kMetaspace.size(), kMetaspace) == 0;
    if (wanted && !escaped) normalized = kMetaspace + normalized;

    BpeScratch scratch;
    if (options_.newline_runs) {
        for (size_t begin = 0; begin < normalized.size();) {
            const bool newlines = normalized[begin] == '\n';
            const size_t end = newlines ? normalized.find_first_not_of('\n', begin) : normalized.find('\n', begin);
            const std::string word = normalized.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
            const int32_t whole = newlines ? bpe_.find_token(word) : -1;
            if (whole >= 0) {
                out.push_back(whole);
            } else {
                encode_word(word, scratch, out);
            }
            begin += word.size();
        }
        return;
    }
    if (!options_.split) {
        encode_word(normalized, scratch, out);
        return;
    }
    size_t begin = 0;
    for (size_t next = normalized.find(kMetaspace, 1); next != std::string::npos;
         next = normalized.find(kMetaspace, next + kMetaspace.size())) {
        encode_word(normalized.substr(begin, next - begin), scratch, out);
        begin = next;
    }
    encode_word(normalized.substr(begin), scratch, out);
}

void MetaspaceBpeTokenizer::encode_word(const std::string& word, BpeScratch& scratch, std::vector<int32_t>& out) const {
    if (options_.ignore_merges) {
        const int32_t id = bpe_.find_token(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    bpe_.encode_chars(word.data(), word.size(), options_.fallback, scratch, out);
}

}  // namespace vllm
