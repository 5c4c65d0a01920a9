// What structured output needs from the tokenizer: the bytes of every
// token (views into the tokenizer's own table, not a copy), the byte trie
// over them, and the end-of-generation ids. The trie is built when a
// grammar first asks for it: an engine that never serves structured output
// never pays its time or memory (for Gemma 3's 262,144 tokens, about 10 MB).
// Immutable once built, so one instance is shared by every request (and
// thread).
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "structured/token_trie.h"

namespace vllm {
class Tokenizer;
}

namespace vllm::structured {

class Vocabulary {
public:
    // Keeps a reference to `tokenizer` (for token bytes and jump-forward's
    // tokenization), which must outlive this object. Control and unknown
    // tokens get no bytes here: a grammar never allows them; EOG tokens are
    // allowed exactly where the grammar can end.
    explicit Vocabulary(const Tokenizer& tokenizer);

    int32_t size() const { return size_; }
    size_t mask_words() const { return (static_cast<size_t>(size_) + 63) / 64; }
    // Built on the first call (thread-safe).
    const TokenTrie& trie() const;
    // "" for tokens a grammar never allows (control, unknown, EOG); valid
    // while the tokenizer lives.
    std::string_view token_bytes(int32_t id) const;
    const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
    bool is_eog(int32_t id) const;

    // The tokenizer's own tokenization of `text` (no special tokens);
    // empty when the tokenizer refuses it.
    std::vector<int32_t> tokenize(const std::string& text) const;

private:
    const Tokenizer& tokenizer_;
    int32_t size_;
    std::vector<int32_t> eog_ids_;
    mutable std::once_flag trie_built_;
    mutable std::optional<TokenTrie> trie_;
};

}  // namespace vllm::structured
