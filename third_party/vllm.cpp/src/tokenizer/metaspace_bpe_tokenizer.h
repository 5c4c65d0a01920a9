// SentencePiece-style BPE as a tokenizer.json describes it (Llama 2,
// Mistral, Gemma): between added tokens, the text comes normalized (the
// normalizer may have put a "▁" in front and replaced spaces by U+2581);
// a Metaspace pre-tokenizer replaces spaces by "▁", may put one in front and
// may split the text before each "▁", and each word is
// merged by rank from its characters, a character outside the vocabulary
// falling back to its <0xNN> byte tokens. Detokenizing maps "▁" back to a
// space and keeps a leading one, as for the GGUF SentencePiece tokenizer.
// Gemma 4's GGUF vocabulary (tokenizer.ggml.model "gemma4", llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_GEMMA4) is this tokenizer too, over its
// tokenizer.ggml.merges: spaces become "▁", and the text is cut into runs
// of newlines and runs of other characters (newline_runs), a newline run
// taken whole where it is a token.
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
    BpeCharFallback fallback;
    bool newline_runs = false;   // Gemma 4's GGUF split (above)
};

class MetaspaceBpeTokenizer final : public Tokenizer {
public:
    MetaspaceBpeTokenizer(TokenizerData data, const std::vector<MergePair>& merges,
                          AddedVocabulary added, const MetaspaceOptions& options);
    // From GGUF metadata (Gemma 4): data.merges split as llama.cpp splits
    // them, special tokens matched as for every GGUF vocabulary.
    MetaspaceBpeTokenizer(TokenizerData data, const MetaspaceOptions& options);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;
    void encode_word(const std::string& word, BpeScratch& scratch, std::vector<int32_t>& out) const;

    BpeModel bpe_;
    MetaspaceOptions options_;
};

}  // namespace vllm
