// SentencePiece-style BPE as a tokenizer.json describes it (Llama 2,
// Mistral, Gemma): between added tokens, spaces become U+2581 ("▁"), a "▁"
// may go in front, the text may be split before each "▁", and each word is
// merged by rank from its characters, a character outside the vocabulary
// falling back to its <0xNN> byte tokens. Detokenizing maps "▁" back to a
// space and keeps a leading one, as for the GGUF SentencePiece tokenizer.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

struct MetaspaceOptions {
    enum class Prepend {
        NEVER,
        ALWAYS,  // before every piece of text (normalizer Prepend, Metaspace "always")
        FIRST,   // before the piece that starts the input (Metaspace "first")
    };
    Prepend prepend = Prepend::NEVER;
    // Metaspace's prepend skips a text already starting with "▁" (the
    // Prepend normalizer does not).
    bool prepend_unless_escaped_space = false;
    bool split = false;          // each "▁" starts a new word (Metaspace split)
    bool ignore_merges = false;  // a word that is a token is taken whole
    BpeCharFallback fallback;
};

class MetaspaceBpeTokenizer final : public Tokenizer {
public:
    MetaspaceBpeTokenizer(TokenizerData data, const std::vector<MergePair>& merges,
                          std::vector<SpecialTokenSplitter::Special> specials, const MetaspaceOptions& options);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;
    void encode_word(const std::string& word, BpeScratch& scratch, std::vector<int32_t>& out) const;

    BpeModel bpe_;
    MetaspaceOptions options_;
};

}  // namespace vllm
