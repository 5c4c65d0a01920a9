#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/token_pieces.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm {

namespace {

// Min-heap order: lowest rank first, then leftmost.
bool later(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

// Appends a symbol linked after the previous one; merge_and_emit ends the
// chain.
void append_symbol(BpeScratch& scratch, int32_t id) {
    const int32_t i = static_cast<int32_t>(scratch.symbols.size());
    scratch.symbols.push_back({id, i - 1, i + 1});
}

}  // namespace

std::vector<MergePair> split_gguf_merges(const std::vector<std::string>& merges) {
    std::vector<MergePair> pairs;
    pairs.reserve(merges.size());
    for (const std::string& m : merges) {
        const size_t space = m.find(' ', 1);
        if (space == std::string::npos) {
            // Keeps the ranks of the merges after it, as llama.cpp does.
            pairs.emplace_back();
            continue;
        }
        pairs.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
    return pairs;
}

BpeModel::BpeModel(const std::vector<std::string>& tokens, const std::vector<MergePair>& merges)
    : n_vocab_(static_cast<int32_t>(tokens.size())) {
    symbol_ids_.reserve(tokens.size() + 256);
    for (int32_t id = 0; id < n_vocab_; ++id) {
        // An empty token can never be formed; llama.cpp renames it.
        if (tokens[id].empty()) continue;
        auto inserted = symbol_ids_.emplace(tokens[id], id);
        if (!inserted.second) {
            throw_model_load("duplicate token in vocabulary: '" + tokens[id] + "' has ids " +
                             std::to_string(inserted.first->second) + " and " + std::to_string(id));
        }
    }
    for (int b = 0; b < 256; ++b) {
        std::string symbol;
        utf8::append(symbol, byte_to_codepoint(static_cast<uint8_t>(b)));
        byte_symbol_[b] = intern(symbol);
        byte_fallback_id_[b] = find_token(byte_fallback_text(static_cast<uint8_t>(b)));
    }
    std::vector<std::pair<uint64_t, Merge>> ranked;
    ranked.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& left = merges[rank].first;
        const std::string& right = merges[rank].second;
        if (left.empty() || right.empty()) continue;
        const Merge merge{static_cast<int32_t>(rank), intern(left + right)};
        ranked.emplace_back(pair_key(intern(left), intern(right)), merge);
    }
    // A pair listed twice keeps its first (best) rank, as in llama.cpp.
    merges_.build(ranked);
}

void BpeModel::MergeTable::build(const std::vector<std::pair<uint64_t, Merge>>& merges) {
    size_t capacity = 16;
    shift_ = 60;
    while (capacity < 2 * merges.size()) {
        capacity *= 2;
        --shift_;
    }
    mask_ = capacity - 1;
    slots_.assign(capacity, Slot{kEmpty, {0, 0}});
    for (const auto& m : merges) {
        size_t i = slot_of(m.first);
        while (slots_[i].key != kEmpty && slots_[i].key != m.first) i = (i + 1) & mask_;
        if (slots_[i].key == kEmpty) slots_[i] = {m.first, m.second};
    }
}

const BpeModel::Merge* BpeModel::MergeTable::find(uint64_t key) const {
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.key == key) return &s.merge;
        if (s.key == kEmpty) return nullptr;
    }
}

int32_t BpeModel::intern(const std::string& text) {
    auto it = symbol_ids_.find(text);
    if (it != symbol_ids_.end()) return it->second;
    const int32_t id = n_vocab_ + static_cast<int32_t>(extra_symbols_.size());
    extra_symbols_.push_back(text);
    symbol_ids_.emplace(text, id);
    return id;
}

int32_t BpeModel::find_token(const std::string& text) const {
    auto it = symbol_ids_.find(text);
    return it != symbol_ids_.end() && it->second < n_vocab_ ? it->second : -1;
}

void BpeModel::push_candidate(BpeScratch& scratch, int32_t left) const {
    const BpeScratch::Symbol& l = scratch.symbols[left];
    if (l.next < 0) return;
    const int32_t right_id = scratch.symbols[l.next].id;
    const Merge* merge = merges_.find(pair_key(l.id, right_id));
    if (merge == nullptr) return;
    scratch.heap.push_back({merge->rank, left, l.id, right_id, merge->result});
    std::push_heap(scratch.heap.begin(), scratch.heap.end(), later);
}

void BpeModel::emit(int32_t symbol, std::vector<int32_t>& out) const {
    if (symbol < n_vocab_) {
        out.push_back(symbol);
        return;
    }
    // Not a token: llama.cpp looks up each byte of the symbol's text as a
    // one-byte token and drops those that are none.
    for (char c : extra_symbols_[symbol - n_vocab_]) {
        const int32_t id = find_token(std::string(1, c));
        if (id >= 0) out.push_back(id);
    }
}

void BpeModel::encode_word(const char* bytes, size_t n, BpeScratch& scratch, std::vector<int32_t>& out) const {
    scratch.symbols.clear();
    for (size_t i = 0; i < n; ++i) append_symbol(scratch, byte_symbol_[static_cast<uint8_t>(bytes[i])]);
    merge_and_emit(scratch, out);
}

void BpeModel::encode_chars(const char* text, size_t n, const BpeCharFallback& fallback, BpeScratch& scratch,
                            std::vector<int32_t>& out) const {
    scratch.symbols.clear();
    bool previous_unknown = false;
    for (size_t i = 0; i < n;) {
        const utf8::Step step = utf8::step(std::string_view(text, n), i);
        const size_t length = step.status == utf8::Status::VALID ? step.length : 1;
        const int32_t id = find_token(std::string(text + i, length));
        bool unknown = false;
        if (id >= 0) {
            append_symbol(scratch, id);
        } else {
            bool all_bytes = fallback.byte_fallback;
            for (size_t k = 0; k < length && all_bytes; ++k) all_bytes = byte_fallback_id_[static_cast<uint8_t>(text[i + k])] >= 0;
            if (all_bytes) {
                for (size_t k = 0; k < length; ++k) append_symbol(scratch, byte_fallback_id_[static_cast<uint8_t>(text[i + k])]);
            } else if (fallback.unk_id >= 0 && !(fallback.fuse_unk && previous_unknown)) {
                append_symbol(scratch, fallback.unk_id);
            }
            unknown = !all_bytes;
        }
        previous_unknown = unknown;
        i += length;
    }
    merge_and_emit(scratch, out);
}

void BpeModel::merge_and_emit(BpeScratch& scratch, std::vector<int32_t>& out) const {
    auto& symbols = scratch.symbols;
    auto& heap = scratch.heap;
    heap.clear();
    if (symbols.empty()) return;
    symbols.back().next = -1;
    const int32_t count = static_cast<int32_t>(symbols.size());
    for (int32_t i = 0; i + 1 < count; ++i) push_candidate(scratch, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const BpeScratch::Candidate c = heap.back();
        heap.pop_back();
        BpeScratch::Symbol& l = symbols[c.left];
        // A merged-away symbol has id -1; a symbol that merged with its
        // right neighbour has a new id: either way the candidate is stale.
        if (l.id != c.left_id || l.next < 0) continue;
        BpeScratch::Symbol& r = symbols[l.next];
        if (r.id != c.right_id) continue;
        l.id = c.result;
        r.id = -1;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = c.left;
        if (l.prev >= 0) push_candidate(scratch, l.prev);
        push_candidate(scratch, c.left);
    }
    // Symbol 0 is never merged away: merges only remove right symbols.
    for (int32_t i = 0; i >= 0; i = symbols[i].next) emit(symbols[i].id, out);
}

}  // namespace vllm
