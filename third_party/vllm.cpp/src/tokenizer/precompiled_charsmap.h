// SentencePiece's precompiled character map (the normalization rules of an
// nmt_nfkc model, as XLM-RoBERTa's tokenizer carries them: GGUF
// tokenizer.ggml.precompiled_charsmap, tokenizer.json's Precompiled
// normalizer): a double-array trie over input bytes (XOR-compressed, as
// Kanda 2018 packs it) whose leaves index NUL-terminated replacement
// strings. The longest prefix the trie holds is replaced, as SentencePiece
// and llama.cpp replace it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vllm {

class PrecompiledCharsmap {
public:
    PrecompiledCharsmap() = default;
    // MODEL_LOAD error for a blob too short for the trie size it states.
    explicit PrecompiledCharsmap(const std::string& blob);

    bool empty() const { return units_.empty(); }
    // The replacement of the longest prefix of text[pos...] that the map
    // holds, and that prefix's length in `consumed`; false when none (or
    // when the map's entry points outside its strings).
    bool longest_prefix(std::string_view text, size_t pos, size_t& consumed, std::string_view& replacement) const;
    // Every mapped prefix replaced, left to right; other characters copied,
    // invalid UTF-8 bytes as U+FFFD (SentencePiece's and llama.cpp's way).
    std::string normalize(std::string_view text) const;
    // Hugging Face's Precompiled normalizer: per grapheme cluster (a
    // character with its combining marks, joiners and emoji modifiers; CR
    // LF), a cluster under 6 bytes with any mapped prefix becomes that
    // prefix's replacement (the shortest), else each character is mapped
    // alone. Invalid UTF-8 decodes to U+FFFD first.
    std::string normalize_graphemes(std::string_view text) const;

private:
    // The replacement of a prefix of text[pos, end): the shortest or the
    // longest one the map holds.
    bool find_prefix(std::string_view text, size_t pos, size_t end, bool shortest, size_t& consumed,
                     std::string_view& replacement) const;

    std::vector<uint32_t> units_;
    std::string replacements_;
};

// The length of the UTF-8 sequence a lead byte starts (1 for a stray
// continuation byte), as llama.cpp's unicode_len_utf8 counts it.
size_t utf8_sequence_length(unsigned char lead);

}  // namespace vllm
