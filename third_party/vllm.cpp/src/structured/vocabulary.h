// What structured output needs from the tokenizer, precomputed once per
// engine: the bytes of every token, the byte trie over them, and the
// end-of-generation ids. Immutable after construction, so one instance is
// shared by every request (and thread).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "structured/token_trie.h"

namespace vllm {
class Tokenizer;
}

namespace vllm::structured {

class Vocabulary {
public:
    // Keeps a reference to `tokenizer` (for jump-forward's tokenization),
    // which must outlive this object. Control and unknown tokens get no
    // bytes here: a grammar never allows them; EOG tokens are allowed
    // exactly where the grammar can end.
    explicit Vocabulary(const Tokenizer& tokenizer);

    int32_t size() const { return static_cast<int32_t>(token_bytes_.size()); }
    size_t mask_words() const { return (token_bytes_.size() + 63) / 64; }
    const TokenTrie& trie() const { return trie_; }
    // "" for tokens a grammar never allows (control, unknown).
    const std::string& token_bytes(int32_t id) const { return token_bytes_[id]; }
    const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
    bool is_eog(int32_t id) const;

    // The tokenizer's own tokenization of `text` (no special tokens);
    // empty when the tokenizer refuses it.
    std::vector<int32_t> tokenize(const std::string& text) const;

private:
    const Tokenizer& tokenizer_;
    std::vector<std::string> token_bytes_;
    std::vector<int32_t> eog_ids_;
    TokenTrie trie_;
};

}  // namespace vllm::structured
