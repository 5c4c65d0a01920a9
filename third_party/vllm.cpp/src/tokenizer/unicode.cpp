#include "tokenizer/unicode.h"
#include "util/utf8.h"

#include <algorithm>
#include <array>

namespace vllm {

namespace {

constexpr uint32_t kBmpSize = 0x10000;

// Classes of the Basic Multilingual Plane spread into a flat table: nearly
// all text lives there, and a lookup per code point must be cheap.
const std::vector<uint8_t>& bmp_classes() {
    static const std::vector<uint8_t> table = [] {
        std::vector<uint8_t> t(kBmpSize, 0);
        for (size_t i = 0; i < kCodepointRangeCount; ++i) {
            const CodepointRange& r = kCodepointRanges[i];
            for (uint32_t c = r.first; c <= r.last && c < kBmpSize; ++c) t[c] = r.cls;
        }
        return t;
    }();
    return table;
}

// The value of the range of sorted, disjoint `ranges` holding cpt, or 0.
uint8_t range_value(const CodepointRange* ranges, size_t count, uint32_t cpt) {
    const CodepointRange* end = ranges + count;
    const CodepointRange* it =
        std::upper_bound(ranges, end, cpt, [](uint32_t c, const CodepointRange& r) { return c < r.first; });
    if (it == ranges) return 0;
    --it;
    return cpt <= it->last ? it->cls : 0;
}

struct ByteAlphabet {
    std::array<uint32_t, 256> to_cpt{};
    std::array<int16_t, 512> to_byte{};  // every symbol is below U+0200
};

const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet = [] {
        ByteAlphabet a;
        a.to_byte.fill(-1);
        // Printable Latin-1 bytes stand for themselves; the rest (controls,
        // space, DEL, NBSP, soft hyphen) are moved to U+0100 onwards in
        // byte order.
        auto printable = [](int b) {
            return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cpt = printable(b) ? static_cast<uint32_t>(b) : next++;
            a.to_cpt[b] = cpt;
            a.to_byte[cpt] = static_cast<int16_t>(b);
        }
        return a;
    }();
    return alphabet;
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

uint8_t codepoint_class(uint32_t cpt) {
    if (cpt < kBmpSize) return bmp_classes()[cpt];
    return range_value(kCodepointRanges, kCodepointRangeCount, cpt);
}

uint8_t letter_case(uint32_t cpt) { return range_value(kLetterCaseRanges, kLetterCaseRangeCount, cpt); }

void decode_utf8_lenient(const std::string& text, std::vector<uint32_t>& cpts) {
    cpts.clear();
    cpts.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char b0 = s[i];
        size_t len = 0;
        uint32_t cpt = 0;
        if (b0 < 0x80) {
            len = 1;
            cpt = b0;
        } else if ((b0 & 0xE0) == 0xC0) {
            len = 2;
            cpt = b0 & 0x1F;
        } else if ((b0 & 0xF0) == 0xE0) {
            len = 3;
            cpt = b0 & 0x0F;
        } else if ((b0 & 0xF8) == 0xF0) {
            len = 4;
            cpt = b0 & 0x07;
        }
        // len == 0: a stray continuation byte or an 0xF8.. lead.
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; ++k) {
            if (!is_continuation(s[i + k])) ok = false;
            cpt = (cpt << 6) | (s[i + k] & 0x3F);
        }
        if (!ok) {
            cpts.push_back(kReplacementChar);
            i += 1;
            continue;
        }
        cpts.push_back(cpt <= 0x10FFFF ? cpt : kReplacementChar);
        i += len;
    }
}

uint32_t byte_to_codepoint(uint8_t byte) { return byte_alphabet().to_cpt[byte]; }

int codepoint_to_byte(uint32_t cpt) {
    return cpt < byte_alphabet().to_byte.size() ? byte_alphabet().to_byte[cpt] : -1;
}

size_t append_repaired_utf8(const char* s, size_t n, bool final, std::string& out) {
    size_t i = 0;
    while (i < n) {
        const utf8::Step step = utf8::step(std::string_view(s, n), i);
        if (step.status == utf8::Status::INCOMPLETE && !final) break;
        if (step.status == utf8::Status::VALID) {
            out.append(s + i, step.length);
        } else {
            utf8::append(out, kReplacementChar);
        }
        i += step.length;
    }
    return i;
}

}  // namespace vllm
