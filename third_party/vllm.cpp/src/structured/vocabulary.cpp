#include "structured/vocabulary.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace vllm::structured {

namespace {
std::vector<std::string> grammar_visible_bytes(const Tokenizer& tokenizer) {
    std::vector<std::string> out(static_cast<size_t>(tokenizer.vocab_size()));
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        // skip_special: control tokens come back empty and stay out of the trie.
        out[id] = tokenizer.is_eog(id) ? std::string() : tokenizer.token_bytes(id, /*skip_special=*/true);
    }
    return out;
}
}  // namespace

Vocabulary::Vocabulary(const Tokenizer& tokenizer)
    : tokenizer_(tokenizer),
      token_bytes_(grammar_visible_bytes(tokenizer)),
      eog_ids_(tokenizer.eog_ids()),
      trie_(token_bytes_) {}

bool Vocabulary::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::vector<int32_t> Vocabulary::tokenize(const std::string& text) const {
    try {
        return tokenizer_.encode(text, /*add_special=*/false, /*parse_special=*/false);
    } catch (const Error&) {
        return {};
    }
}

}  // namespace vllm::structured
