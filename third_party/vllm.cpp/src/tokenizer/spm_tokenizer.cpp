#include "tokenizer/spm_tokenizer.h"

#include "tokenizer/token_pieces.h"

namespace vllm {

SpmTokenizer::SpmTokenizer(TokenizerData data)
    : Tokenizer(std::move(data)), spm_(data_.tokens, data_.scores, data_.unk_id) {
    set_pieces(metaspace_to_spaces);
}

void SpmTokenizer::encode_text(const std::string& text, bool, std::vector<int32_t>& out) const {
    // llama.cpp prefixes every piece: each starts the text or follows a
    // special token.
    SpmScratch scratch;
    spm_.encode(spaces_to_metaspace(data_.add_space_prefix ? " " + text : text), scratch, out);
}

}  // namespace vllm
