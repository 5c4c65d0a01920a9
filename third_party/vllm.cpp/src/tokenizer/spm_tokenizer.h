// The SentencePiece tokenizer (tokenizer.ggml.model "llama"): between
// special tokens, spaces become U+2581 (with one added in front of each
// piece of text when add_space_prefix says so) and
// the text is merged by score. Detokenizing maps U+2581 back to a space
// and keeps a leading one: the engine detokenizes text generated after a
// prompt, where that space separates words (llama.cpp strips it only when
// detokenizing a whole prompt).
#pragma once
#include <string>
#include <vector>

#include "tokenizer/spm.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class SpmTokenizer final : public Tokenizer {
public:
    explicit SpmTokenizer(TokenizerData data);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;

    SpmModel spm_;
};

}  // namespace vllm
