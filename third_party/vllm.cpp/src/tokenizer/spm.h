// SentencePiece BPE merging, as llama.cpp's llm_tokenizer_spm_session does:
// the text starts as one symbol per UTF-8 character, and the adjacent pair
// whose concatenation is the token of highest score (leftmost on ties) is
// merged until no pair forms a token. A final symbol that is no token is
// written as its bytes' <0xNN> tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
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
    // `tokens` and `scores` must outlive the model (it reads them in
    // place). scores: one per token, or empty for all 0. A token text listed
    // twice means its last id, as in llama.cpp. Bytes without a <0xNN> token
    // fall back to the token of that one byte, else to unk_id (if >= 0),
    // else are dropped.
    SpmModel(const std::vector<std::string>& tokens, const std::vector<float>& scores, int32_t unk_id);

    // Appends the ids of `text` (spaces already escaped as U+2581).
    void encode(const std::string& text, SpmScratch& scratch, std::vector<int32_t>& out) const;

private:
    int32_t find(std::string_view text) const;
    void push_bigram(const std::string& text, SpmScratch& scratch, int32_t left, int32_t right) const;
    float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }

    // Token ids by text: open addressing over 8-byte slots rather than a
    // node per token (a 262,144-token vocabulary took 12.7 MB in an
    // unordered_map, this 4 MB), each slot keeping its text's hash so that
    // a probe compares texts only on a full hash match.
    struct Slot {
        uint32_t hash;
        int32_t id;  // -1: empty
    };
    size_t first_slot(uint64_t hash) const { return static_cast<size_t>(hash) & mask_; }

    const std::vector<std::string>& tokens_;
    const std::vector<float>& scores_;
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    int32_t byte_ids_[256];
};

}  // namespace vllm
