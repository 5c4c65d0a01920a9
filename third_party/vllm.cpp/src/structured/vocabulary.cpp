#include "structured/vocabulary.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace vllm::structured {

Vocabulary::Vocabulary(const Tokenizer& tokenizer)
    : tokenizer_(tokenizer), size_(tokenizer.vocab_size()), eog_ids_(tokenizer.eog_ids()) {}

std::string_view Vocabulary::token_bytes(int32_t id) const {
    // skip_special: control tokens come back empty and stay out of the trie.
    return is_eog(id) ? std::string_view() : tokenizer_.token_view(id, /*skip_special=*/true);
}

const TokenTrie& Vocabulary::trie() const {
    std::call_once(trie_built_, [this] {
        std::vector<std::string_view> bytes(static_cast<size_t>(size_));
        for (int32_t id = 0; id < size_; ++id) bytes[id] = token_bytes(id);
        trie_.emplace(bytes);
    });
    return *trie_;
}

bool Vocabulary::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::vector<int32_t> Vocabulary::tokenize(const std::string& text) const {
    try {
        return tokenizer_.encode(text, /*add_special=*/false, /*parse_special=*/false);
    } catch (const Error&) {
        return {};
    }
}

}  // namespace vllm::structured
