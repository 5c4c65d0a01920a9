// A set of byte values. The grammar is matched over UTF-8 text one byte at a
// time, so every terminal of a compiled grammar is one of these.
#pragma once
#include <cstdint>

namespace vllm::structured {

struct ByteSet {
    uint64_t words[4] = {0, 0, 0, 0};

    bool contains(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
    void add(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
    void add_range(uint8_t lo, uint8_t hi) {
        for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
    }
    void merge(const ByteSet& other) {
        for (int i = 0; i < 4; ++i) words[i] |= other.words[i];
    }
    bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
    int count() const {
        int n = 0;
        for (uint64_t w : words) n += __builtin_popcountll(w);
        return n;
    }
    // The single member, or -1 when the set has zero or several.
    int only_member() const {
        if (count() != 1) return -1;
        for (int i = 0; i < 4; ++i)
            if (words[i]) return i * 64 + __builtin_ctzll(words[i]);
        return -1;
    }
    bool operator==(const ByteSet& o) const {
        return words[0] == o.words[0] && words[1] == o.words[1] && words[2] == o.words[2] &&
               words[3] == o.words[3];
    }
};

}  // namespace vllm::structured
