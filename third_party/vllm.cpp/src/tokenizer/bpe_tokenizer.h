// The byte-level BPE tokenizer (tokenizer.ggml.model "gpt2"): between
// special tokens, text is pre-tokenized into words and each word merged by
// BPE.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class BpeTokenizer final : public Tokenizer {
public:
    // From GGUF metadata: data.merges split as llama.cpp splits them.
    BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec);
    // From a tokenizer.json: its merges and added tokens.
    BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec, const std::vector<MergePair>& merges,
                 AddedVocabulary added);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;

    PreTokenizer pretokenizer_;
    bool ignore_merges_;
    BpeModel bpe_;
};

}  // namespace vllm
