// tokenizer.json's added tokens, found in the input the way Hugging Face
// `tokenizers` finds them (its AddedVocabulary::extract_and_normalize):
//   1. tokens with normalized false (special tokens as exported) are
//      matched in the raw input;
//   2. each piece of text left is normalized, and the normalized tokens
//      (their texts normalized too) are matched in it.
// Each pass takes leftmost-longest, non-overlapping matches (an
// Aho-Corasick MatchKind::LeftmostLongest); a single_word match is dropped
// when a word character (Rust regex's Unicode \w) touches it on either
// side; lstrip/rstrip take the Unicode White_Space next to a match with it.
// A special token not parsed (parse_special false) stays text, and its
// match still hides the text it covers from the other tokens, as
// `encode_special_tokens` does. GGUF vocabularies keep llama.cpp's way
// (special_tokens.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf_normalizer.h"

namespace vllm {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool special = false;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
};

// A piece of the input: an added token (token >= 0) or normalized text.
struct AddedTokenPiece {
    int32_t token;
    std::string text;
    bool at_start;  // the text starts the input
};

class AddedVocabulary {
public:
    // Tokens in the file's order; the special ones take precedence among
    // equal texts, as tokenizers orders its patterns.
    AddedVocabulary(const std::vector<AddedToken>& tokens, HfNormalizer normalizer);

    void split(const std::string& text, bool parse_special, std::vector<AddedTokenPiece>& out) const;

private:
    // A byte trie of the patterns: the longest pattern at a position.
    class Matcher {
    public:
        Matcher();
        void add(const std::string& pattern, uint32_t token_index);
        // The index of the longest pattern starting at text[pos], or -1;
        // its length in `length`.
        int64_t longest_at(std::string_view text, size_t pos, size_t& length) const;

    private:
        struct Node {
            std::vector<std::pair<uint8_t, uint32_t>> children;  // sorted by byte
            int64_t token_index = -1;
        };
        std::vector<Node> nodes_;
    };

    // A match or a text slice of a sentence (token < 0: text).
    struct Span {
        int32_t token;
        size_t begin;
        size_t end;
    };
    void find_matches(std::string_view sentence, const Matcher& matcher, bool parse_special,
                      std::vector<Span>& out) const;

    std::vector<AddedToken> tokens_;
    HfNormalizer normalizer_;
    Matcher raw_;
    Matcher normalized_;
};

}  // namespace vllm
