// Code point sets as UTF-8 byte patterns: a character class such as [^"\\]
// or [α-ω] becomes a handful of byte-range sequences the byte-level matcher
// can follow (the construction RE2 and Rust's regex-syntax use).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vllm::structured {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
    uint32_t lo;
    uint32_t hi;  // inclusive
};

// Sorted, overlapping and adjacent ranges merged.
std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges);

// Every code point in [0, U+10FFFF] not in `ranges` (surrogates included;
// utf8_sequences drops them).
std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges);

// One byte range per position of an encoded code point.
using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;

// Sequences whose union is exactly the UTF-8 encodings of the code points in
// `ranges`, surrogates (U+D800..U+DFFF, not encodable) left out.
std::vector<ByteRangeSequence> utf8_sequences(const std::vector<CodepointRange>& ranges);


}  // namespace vllm::structured
