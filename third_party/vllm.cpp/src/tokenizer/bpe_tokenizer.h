// The byte-level BPE tokenizer (tokenizer.ggml.model "gpt2"): special
// tokens cut out first, the rest pre-tokenized into words and each word
// merged by BPE.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class BpeTokenizer final : public Tokenizer {
public:
    BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec);

    std::vector<int32_t> encode(const std::string& text, bool add_special, bool parse_special) const override;
    std::string token_bytes(int32_t id, bool skip_special) const override;

private:
    void encode_text(const std::string& text, std::vector<int32_t>& out) const;

    PreTokenizer pretokenizer_;
    bool ignore_merges_;
    BpeModel bpe_;
    SpecialTokenSplitter specials_;
    // token_bytes(id, false) of every token, and whether skip_special
    // silences it (control and unknown tokens).
    std::vector<std::string> pieces_;
    std::vector<bool> skippable_;
};

}  // namespace vllm
