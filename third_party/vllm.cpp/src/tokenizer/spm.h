// SentencePiece BPE merging, as llama.cpp's llm_tokenizer_spm_session does:
// the text starts as one symbol per UTF-8 character, and the adjacent pair
// whose concatenation is the token of highest score (leftmost on ties) is
// merged until no pair forms a token. A final symbol that is no token is
// written as its bytes' <0xNN> tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vllm {

// Reusable buffers of SpmModel::encode, one per caller so encoding is
// reentrant.
struct SpmScratch {
    struct Symbol {
        uint32_t begin;  // byte range of the text
        uint32_t size;   // 0 once merged into its left neighbour
        int32_t prev;
        int32_t next;
    };
    struct Bigram {
        float score;
        int32_t left;
        int32_t right;
        uint32_t size;  // the pair's bytes when queued: stale if either side grew
    };
    std::vector<Symbol> symbols;
    std::vector<Bigram> heap;
};

class SpmModel {
public:
    // `tokens` must outlive the model (it keys its index by views into
    // them). scores: one per token, or empty for all 0. A token text listed
    // twice means its last id, as in llama.cpp. Bytes without a <0xNN> token
    // fall back to the token of that one byte, else to unk_id (if >= 0),
    // else are dropped.
    SpmModel(const std::vector<std::string>& tokens, const std::vector<float>& scores, int32_t unk_id);

    // Appends the ids of `text` (spaces already escaped as U+2581).
    void encode(const std::string& text, SpmScratch& scratch, std::vector<int32_t>& out) const;

private:
    int32_t find(std::string_view text) const;
    void push_bigram(const std::string& text, SpmScratch& scratch, int32_t left, int32_t right) const;

    std::unordered_map<std::string_view, int32_t> ids_;
    std::vector<float> scores_;
    int32_t byte_ids_[256];
};

}  // namespace vllm
