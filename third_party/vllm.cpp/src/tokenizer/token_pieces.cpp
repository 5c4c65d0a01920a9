#include "tokenizer/token_pieces.h"

#include <vector>

#include "tokenizer/unicode.h"

namespace vllm {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

const char kMetaspace[] = "\xE2\x96\x81";  // U+2581

}  // namespace

int byte_fallback_value(const std::string& text) {
    if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
    const int hi = hex_digit(text[3]);
    const int lo = hex_digit(text[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string byte_level_to_bytes(const std::string& text) {
    std::vector<uint32_t> cpts;
    decode_utf8_lenient(text, cpts);
    std::string bytes;
    for (uint32_t cpt : cpts) {
        const int b = codepoint_to_byte(cpt);
        if (b >= 0) {
            bytes.push_back(static_cast<char>(b));
        } else {
            append_utf8(cpt, bytes);
        }
    }
    return bytes;
}

std::string metaspace_to_spaces(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 3, kMetaspace) == 0) {
            out.push_back(' ');
            i += 3;
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

std::string spaces_to_metaspace(const std::string& text) {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    for (char c : text) {
        if (c == ' ') {
            out += kMetaspace;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

}  // namespace vllm
