#include "structured/utf8_ranges.h"
#include "util/utf8.h"

#include <algorithm>

namespace vllm::structured {

std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges) {
    std::sort(ranges.begin(), ranges.end(),
              [](const CodepointRange& a, const CodepointRange& b) { return a.lo < b.lo; });
    std::vector<CodepointRange> out;
    for (const CodepointRange& r : ranges) {
        if (!out.empty() && r.lo <= out.back().hi + 1) {
            out.back().hi = std::max(out.back().hi, r.hi);
        } else {
            out.push_back(r);
        }
    }
    return out;
}

std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> out;
    uint32_t next = 0;
    for (const CodepointRange& r : normalize_ranges(ranges)) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
    return out;
}

namespace {

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] with both ends of one encoded length: split until every byte
// position varies independently over a range, then emit that sequence.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
    const int len = encoded_length(lo);
    for (int i = 1; i < len; ++i) {
        const uint32_t low_bits = (uint32_t{1} << (6 * i)) - 1;  // the last i continuation bytes
        if ((lo & ~low_bits) != (hi & ~low_bits)) {
            if ((lo & low_bits) != 0) {
                split_same_length(lo, lo | low_bits, out);
                split_same_length((lo | low_bits) + 1, hi, out);
                return;
            }
            if ((hi & low_bits) != low_bits) {
                split_same_length(lo, (hi & ~low_bits) - 1, out);
                split_same_length(hi & ~low_bits, hi, out);
                return;
            }
        }
    }
    std::string a, b;
    utf8::append(a, lo);
    utf8::append(b, hi);
    ByteRangeSequence seq;
    for (size_t k = 0; k < a.size(); ++k)
        seq.emplace_back(static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k]));
    out.push_back(std::move(seq));
}

}  // namespace

std::vector<ByteRangeSequence> utf8_sequences(const std::vector<CodepointRange>& ranges) {
    static const uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
    std::vector<ByteRangeSequence> out;
    for (CodepointRange r : normalize_ranges(ranges)) {
        r.hi = std::min(r.hi, kMaxCodepoint);
        // Cut out the surrogates, then cut at each encoded-length boundary.
        std::vector<CodepointRange> pieces;
        if (r.lo < 0xD800 && r.hi >= 0xD800) {
            pieces.push_back({r.lo, 0xD7FF});
            if (r.hi > 0xDFFF) pieces.push_back({0xE000, r.hi});
        } else if (r.lo >= 0xD800 && r.lo <= 0xDFFF) {
            if (r.hi > 0xDFFF) pieces.push_back({0xE000, r.hi});
        } else if (r.lo <= r.hi) {
            pieces.push_back(r);
        }
        for (CodepointRange p : pieces) {
            for (uint32_t end : kLengthEnds) {
                if (p.lo > p.hi) break;
                if (p.lo > end) continue;
                const uint32_t piece_hi = std::min(p.hi, end);
                split_same_length(p.lo, piece_hi, out);
                p.lo = piece_hi + 1;
                if (piece_hi == kMaxCodepoint) break;
            }
        }
    }
    return out;
}

}  // namespace vllm::structured
