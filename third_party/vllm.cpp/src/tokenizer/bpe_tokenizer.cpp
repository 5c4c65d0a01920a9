#include "tokenizer/bpe_tokenizer.h"

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace vllm {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// What a token stands for when special tokens are rendered, as llama.cpp's
// token_to_piece has it for BPE vocabularies.
std::string decode_piece(const std::string& text, TokenType type) {
    switch (type) {
        case TokenType::NORMAL: {
            // Byte-level symbols back to bytes. A code point outside the
            // alphabet passes through as UTF-8 (llama.cpp writes an
            // "[UNK_BYTE_...]" marker instead).
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
        case TokenType::CONTROL:
        case TokenType::UNKNOWN:
        case TokenType::USER_DEFINED:
            return text;
        case TokenType::BYTE: {
            // "<0xAB>"
            if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return "";
            const int hi = hex_digit(text[3]);
            const int lo = hex_digit(text[4]);
            if (hi < 0 || lo < 0) return "";
            return std::string(1, static_cast<char>(hi * 16 + lo));
        }
        default:
            // Unused and undefined tokens render as nothing.
            return "";
    }
}

}  // namespace

BpeTokenizer::BpeTokenizer(TokenizerData data, const PreTokenizerSpec& spec)
    : Tokenizer(std::move(data)),
      pretokenizer_(spec.kind),
      ignore_merges_(spec.ignore_merges),
      bpe_(data_.tokens, data_.merges),
      specials_(data_.tokens, data_.token_types) {
    const size_t n = data_.tokens.size();
    pieces_.resize(n);
    skippable_.resize(n);
    for (size_t id = 0; id < n; ++id) {
        const auto type = static_cast<TokenType>(data_.token_types[id]);
        pieces_[id] = decode_piece(data_.tokens[id], type);
        skippable_[id] = type == TokenType::CONTROL || type == TokenType::UNKNOWN;
    }
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && data_.add_bos) out.push_back(data_.bos_id);
    std::vector<Fragment> fragments;
    specials_.split(text, parse_special, fragments);
    for (const Fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
        } else {
            encode_text(text.substr(f.begin, f.end - f.begin), out);
        }
    }
    if (add_special && data_.add_eos) out.push_back(data_.eos_id);
    return out;
}

void BpeTokenizer::encode_text(const std::string& text, std::vector<int32_t>& out) const {
    std::string normalized;
    std::vector<Word> words;
    pretokenizer_.split(text, normalized, words);
    BpeScratch scratch;
    std::string symbols;
    for (const Word& w : words) {
        const char* bytes = normalized.data() + w.begin;
        const size_t n = w.end - w.begin;
        if (ignore_merges_) {
            symbols.clear();
            for (size_t i = 0; i < n; ++i) append_utf8(byte_to_codepoint(static_cast<uint8_t>(bytes[i])), symbols);
            const int32_t id = bpe_.find_token(symbols);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        bpe_.encode_word(bytes, n, scratch, out);
    }
}

std::string BpeTokenizer::token_bytes(int32_t id, bool skip_special) const {
    if (id < 0 || id >= vocab_size()) {
        throw_invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                               std::to_string(vocab_size()) + ")");
    }
    if (skip_special && skippable_[id]) return "";
    return pieces_[id];
}

}  // namespace vllm
