// BPE merging within one pre-tokenized word: the word starts as one symbol
// per byte (byte-level BPE) or per character (SentencePiece-style BPE from
// a tokenizer.json), and the adjacent pair of lowest merge rank (leftmost
// on ties) is merged until no pair has a rank, as llama.cpp's
// llm_tokenizer_bpe_session and Hugging Face's BPE model do.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vllm {

// Reusable buffers of encode_word, one per caller so encoding is
// reentrant.
struct BpeScratch {
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
    };
    struct Candidate {
        int32_t rank;
        int32_t left;  // symbol index; the right one is symbols[left].next
        int32_t left_id;   // the pair's ids when queued: a merge on either
        int32_t right_id;  // side since then makes the candidate stale
        int32_t result;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
};

using MergePair = std::pair<std::string, std::string>;

// GGUF merges ("left right") as pairs, split at the first space after the
// first byte as llama.cpp splits them; a merge without one is skipped.
std::vector<MergePair> split_gguf_merges(const std::vector<std::string>& merges);

// What a character outside the vocabulary becomes (character-level BPE).
struct BpeCharFallback {
    bool byte_fallback = false;  // its bytes' <0xNN> tokens, when all exist
    int32_t unk_id = -1;         // else this token (-1: the character is dropped)
    bool fuse_unk = false;       // a run of unknown characters gives one unk_id
};

class BpeModel {
public:
    // merges in rank order. MODEL_LOAD error for a vocabulary with
    // duplicate tokens.
    BpeModel(const std::vector<std::string>& tokens, const std::vector<MergePair>& merges);

    // Appends the token ids of one word, given as raw bytes, each byte
    // starting as its byte-level symbol.
    void encode_word(const char* bytes, size_t n, BpeScratch& scratch, std::vector<int32_t>& out) const;

    // Appends the token ids of one word whose UTF-8 characters start as the
    // tokens of the same text (an invalid byte is a character of its own).
    void encode_chars(const char* text, size_t n, const BpeCharFallback& fallback, BpeScratch& scratch,
                      std::vector<int32_t>& out) const;

    // The id of the token with this (byte-level) text, or -1.
    int32_t find_token(const std::string& text) const;

private:
    struct Merge {
        int32_t rank;
        int32_t result;
    };

    // Merges keyed by the pair of symbol ids: an open-addressing table,
    // since a lookup per adjacent pair is most of the cost of encoding and
    // a node-based map costs a cache miss more per lookup.
    class MergeTable {
    public:
        void build(const std::vector<std::pair<uint64_t, Merge>>& merges);
        // Keeps the first merge of a key inserted twice.
        const Merge* find(uint64_t key) const;

    private:
        struct Slot {
            uint64_t key;
            Merge merge;
        };
        static constexpr uint64_t kEmpty = ~uint64_t(0);  // no pair has it: ids are below 2^31
        size_t slot_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
        std::vector<Slot> slots_;
        size_t mask_ = 0;
        unsigned shift_ = 64;
    };

    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    int32_t intern(const std::string& text);
    // Merges the symbols in scratch (linked in order), then emits them.
    void merge_and_emit(BpeScratch& scratch, std::vector<int32_t>& out) const;
    void push_candidate(BpeScratch& scratch, int32_t left) const;
    void emit(int32_t symbol, std::vector<int32_t>& out) const;

    int32_t n_vocab_;
    // Symbol ids: token ids, then strings that merges name but the
    // vocabulary lacks (their results fall back to single bytes at the end,
    // as in llama.cpp).
    std::unordered_map<std::string, int32_t> symbol_ids_;
    std::vector<std::string> extra_symbols_;
    int32_t byte_symbol_[256];
    int32_t byte_fallback_id_[256];  // the <0xNN> tokens, or -1
    MergeTable merges_;
};

}  // namespace vllm
