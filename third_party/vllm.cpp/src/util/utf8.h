// UTF-8 as RFC 3629 defines it (no overlongs, no surrogates, <= U+10FFFF):
// the one encoder and validator every component uses.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace vllm::utf8 {

// One step of validation at s[i] (i < s.size()): Unicode's well-formed
// byte sequences (table 3-7: no overlongs, surrogates or code points past
// U+10FFFF).
enum class Status { VALID, INVALID, INCOMPLETE };
struct Step {
    Status status;
    // VALID: the sequence's length. INVALID: the length of its maximal
    // subpart (what one U+FFFD replaces). INCOMPLETE: the bytes left, all of
    // which may still begin a valid sequence.
    size_t length;
};

inline Step step(std::string_view s, size_t i) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
    const size_t left = s.size() - i;
    const unsigned char c = p[0];
    if (c < 0x80) return {Status::VALID, 1};
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return {Status::INVALID, 1};
    }
    for (size_t k = 1; k < len; ++k) {
        if (k >= left) return {Status::INCOMPLETE, left};
        const bool in_range = k == 1 ? (p[k] >= lo && p[k] <= hi) : (p[k] & 0xC0) == 0x80;
        if (!in_range) return {Status::INVALID, k};
    }
    return {Status::VALID, len};
}

// Length of the well-formed sequence that starts at s[i] (1 for ASCII), or
// 0 when none does (a stray continuation byte, an overlong or surrogate
// form, a sequence cut off by the end of s).
inline size_t sequence_length(std::string_view s, size_t i) {
    const Step st = step(s, i);
    return st.status == Status::VALID ? st.length : 0;
}

inline bool is_valid(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t len = sequence_length(s, i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

// What UTF-8 can encode: <= U+10FFFF and not a surrogate.
inline bool is_scalar_value(uint32_t cp) { return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

// Appends the encoding of `cp`, which must be a Unicode scalar value:
// callers check what they were given (is_scalar_value).
inline void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The code point of the well-formed sequence at s[i] (sequence_length > 0),
// advancing i past it. On other bytes it returns some value and still
// advances (by at least one byte, never past the end), so a caller that
// walks text it did not validate cannot read out of bounds.
inline uint32_t decode(std::string_view s, size_t& i) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const unsigned char c = p[i];
    if (c < 0x80) return p[i++];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (len > s.size() - i) len = s.size() - i;
    uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
    i += len;
    return cp;
}

}  // namespace vllm::utf8
