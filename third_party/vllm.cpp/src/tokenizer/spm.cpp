#include "tokenizer/spm.h"

#include <algorithm>
#include <functional>

#include "tokenizer/token_pieces.h"

namespace vllm {

namespace {

// Max-heap order: highest score on top, then leftmost.
bool lower_priority(const SpmScratch::Bigram& a, const SpmScratch::Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
}

// The length of the UTF-8 sequence a lead byte announces; llama.cpp cuts
// characters by it without validating the continuation bytes.
uint32_t utf8_length(char lead) {
    static const uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[static_cast<uint8_t>(lead) >> 4];
}

// The hash bits a slot keeps: the high half, since the low bits already
// chose the slot.
uint32_t tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }

}  // namespace

SpmModel::SpmModel(const std::vector<std::string>& tokens, const std::vector<float>& scores, int32_t unk_id)
    : tokens_(tokens), scores_(scores) {
    // At most half full: a miss (most bigram lookups) ends within a probe or two.
    size_t capacity = 16;
    while (capacity < 2 * tokens.size()) capacity *= 2;
    slots_.assign(capacity, Slot{0, -1});
    mask_ = capacity - 1;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const uint64_t hash = std::hash<std::string_view>()(tokens[id]);
        for (size_t i = first_slot(hash);; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.id < 0 || (slot.hash == tag(hash) && tokens[slot.id] == tokens[id])) {
                slot = Slot{tag(hash), static_cast<int32_t>(id)};  // a repeated text: its last id
                break;
            }
        }
    }
    for (int b = 0; b < 256; ++b) {
        int32_t id = find(byte_fallback_text(static_cast<uint8_t>(b)));
        if (id < 0) {
            const char byte = static_cast<char>(b);
            id = find(std::string_view(&byte, 1));
        }
        byte_ids_[b] = id >= 0 ? id : unk_id;
    }
}

int32_t SpmModel::find(std::string_view text) const {
    const uint64_t hash = std::hash<std::string_view>()(text);
    for (size_t i = first_slot(hash);; i = (i + 1) & mask_) {
        const Slot& slot = slots_[i];
        if (slot.id < 0) return -1;
        if (slot.hash == tag(hash) && tokens_[slot.id] == text) return slot.id;
    }
}

void SpmModel::push_bigram(const std::string& text, SpmScratch& scratch, int32_t left, int32_t right) const {
    if (left < 0 || right < 0) return;
    const SpmScratch::Symbol& l = scratch.symbols[left];
    const SpmScratch::Symbol& r = scratch.symbols[right];
    const uint32_t size = l.size + r.size;
    const int32_t id = find(std::string_view(text.data() + l.begin, size));
    if (id < 0) return;
    scratch.heap.push_back({score(id), left, right, size});
    std::push_heap(scratch.heap.begin(), scratch.heap.end(), lower_priority);
}

void SpmModel::encode(const std::string& text, SpmScratch& scratch, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    auto& symbols = scratch.symbols;
    auto& heap = scratch.heap;
    symbols.clear();
    heap.clear();
    const uint32_t n = static_cast<uint32_t>(text.size());
    for (uint32_t offset = 0; offset < n;) {
        const uint32_t size = std::min(utf8_length(text[offset]), n - offset);
        const int32_t index = static_cast<int32_t>(symbols.size());
        offset += size;
        symbols.push_back({offset - size, size, index - 1, offset == n ? -1 : index + 1});
    }
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) push_bigram(text, scratch, i - 1, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), lower_priority);
        const SpmScratch::Bigram b = heap.back();
        heap.pop_back();
        SpmScratch::Symbol& l = symbols[b.left];
        SpmScratch::Symbol& r = symbols[b.right];
        if (l.size == 0 || r.size == 0 || l.size + r.size != b.size) continue;
        l.size += r.size;
        r.size = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = b.left;
        push_bigram(text, scratch, l.prev, b.left);
        push_bigram(text, scratch, b.left, l.next);
    }

    // Every merged symbol is a token; a single character may not be, and
    // then its bytes are written (llama.cpp's resegment never finds such a
    // symbol among its merges).
    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
        const SpmScratch::Symbol& s = symbols[i];
        const int32_t id = find(std::string_view(text.data() + s.begin, s.size));
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (uint32_t k = 0; k < s.size; ++k) {
            const int32_t byte_id = byte_ids_[static_cast<uint8_t>(text[s.begin + k])];
            if (byte_id >= 0) out.push_back(byte_id);
        }
    }
}

}  // namespace vllm
