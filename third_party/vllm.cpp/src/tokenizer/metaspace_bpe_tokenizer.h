// SentencePiece-style BPE as a tokenizer.json describes it (Llama 2,
// Mistral, Gemma): between added tokens, the text comes normalized (the
// normalizer may have put a "▁" in front and replaced spaces by U+2581);
// a Metaspace pre-tokenizer replaces spaces by "▁", may put one in front and
// may split the text before each "▁", and each word is
// merged by rank from its characters, a character outside the vocabulary
// falling back to its <0xNN> byte tokens. Detokenizing maps "▁" back to a
// space and keeps a leading one, as for the GGUF SentencePiece tokenizer.
// Gemma 4's GGUF tokenizer (tokenizer.ggml.model "gemma4") is the same
// model as llama.cpp runs it: spaces become "▁", words are the runs of
// newlines and of other characters, and a run of newlines that is a token
// is taken whole.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

struct MetaspaceOptions {
    // The Metaspace pre-tokenizer's "▁" in front of a text not starting
    // with one.
    enum class Prepend {
        NEVER,
        ALWAYS,  // before every piece of text
        FIRST,   // before the piece that starts the input
    };
    Prepend prepend = Prepend::NEVER;
    bool split = false;          // each "▁" starts a new word (Metaspace split)
    bool ignore_merges = false;  // a word that is a token is taken whole
    bool newline_runs = false;   // Gemma 4: words are newline runs and the runs between
    BpeCharFallback fallback;
};

class MetaspaceBpeTokenizer final : public Tokenizer {
public:
    MetaspaceBpeTokenizer(TokenizerData data, const std::vector<MergePair>& merges,
                          AddedVocabulary added, const MetaspaceOptions& options);
    // From GGUF metadata (Gemma 4): data.merges split as llama.cpp splits
    // them, special tokens matched as llama.cpp matches them.
    MetaspaceBpeTokenizer(TokenizerData data, const MetaspaceOptions& options);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;
    void encode_word(const std::string& word, BpeScratch& scratch, std::vector<int32_t>& out) const;

    BpeModel bpe_;
    MetaspaceOptions options_;
};

}  // namespace vllm
