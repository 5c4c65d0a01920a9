// The Unigram tokenizer of XLM-RoBERTa-family encoders (bge-m3,
// bge-reranker): the text normalized, then cut where the sum of the piece
// scores is highest (SentencePiece's Viterbi over the lattice of vocabulary
// pieces, one code point at a time; a code point no piece covers is the
// unknown token at the lowest score minus 10, consecutive unknowns fused).
//   - GGUF (tokenizer.ggml.model "t5", llama.cpp's UGM): normalized as
//     llama.cpp does (precompiled_charsmap, spaces escaped to "▁", runs
//     merged when remove_extra_whitespaces, "▁" in front when
//     add_space_prefix); normal, user-defined (score 0) and unused pieces
//     form the lattice over the whole text; </s> after it by default.
//   - tokenizer.json (model Unigram): the text arrives normalized by the
//     file's normalizers (Precompiled, Replace; hf_normalizer.h); the
//     pre-tokenizer (WhitespaceSplit and/or Metaspace) cuts it into words,
//     each its own lattice, every vocabulary piece in it.
// Detokenizing maps "▁" back to a space (a leading one kept, as for
// SentencePiece).
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/metaspace_bpe_tokenizer.h"
#include "tokenizer/precompiled_charsmap.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class UnigramModel {
public:
    // pieces[id] == "" keeps the id out of the lattice; scores by id.
    // Of two cuts ending at one place with equal scores, the first found
    // (whose last piece starts earlier) stays, as in both references.
    UnigramModel(const std::vector<std::string>& pieces, const std::vector<double>& scores, int32_t unk_id,
                 double unk_score);
    void encode(std::string_view text, std::vector<int32_t>& out) const;

private:
    std::unordered_map<std::string, int32_t> ids_;
    std::vector<double> scores_;
    int32_t unk_id_;
    double unk_score_;
    size_t max_piece_bytes_ = 0;
};

// How a tokenizer.json's pre-tokenizer cuts normalized text into words.
// A tokenizer.json score as `tokenizers` reads it: serde_json without its
// float_roundtrip feature parses "d.ddd" as the integer of its digits
// divided by a power of ten, which can land one ulp off the nearest double.
// Cuts of equal score are common in Unigram vocabularies, and that ulp
// decides between them, so the engine reads the scores the same way: from
// the nearest double's shortest decimal form (what the file holds).
double tokenizers_json_score(double nearest);

struct UnigramWordOptions {
    bool whitespace_split = false;  // WhitespaceSplit first: words at whitespace, which is dropped
    MetaspaceOptions metaspace;     // then Metaspace: prepend and split (no pre-tokenizer: neither)
};

class UnigramTokenizer final : public Tokenizer {
public:
    // From GGUF metadata (llama.cpp's UGM).
    explicit UnigramTokenizer(TokenizerData data);
    // From a tokenizer.json: `scores` by id, `in_vocab` the model's pieces.
    UnigramTokenizer(TokenizerData data, AddedVocabulary added, const std::vector<double>& scores,
                     const std::vector<bool>& in_vocab, const UnigramWordOptions& words);

private:
    void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const override;
    // llama.cpp's UGM normalization of a GGUF piece of text.
    std::string normalize_gguf(const std::string& text) const;

    bool from_gguf_;
    PrecompiledCharsmap charsmap_;  // GGUF only
    UnigramWordOptions words_;      // tokenizer.json only
    UnigramModel model_;
};

}  // namespace vllm
