#include "tokenizer/bert_normalizer.h"

#include <algorithm>

#include "tokenizer/case_tables.h"
#include "tokenizer/nfc.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace vllm {

namespace {

// The CJK ideograph blocks BERT isolates (Hugging Face's is_chinese_char;
// its 0x2B920 start, where Unicode's block starts at 0x2B820, is kept as
// llama.cpp keeps it).
bool is_chinese_char(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_whitespace(uint32_t c) { return (codepoint_class(c) & kClassWhitespace) != 0; }

bool in_spans(const CodepointSpan* spans, size_t count, uint32_t c) {
    const CodepointSpan* end = spans + count;
    const CodepointSpan* it = std::upper_bound(spans, end, c, [](uint32_t v, const CodepointSpan& r) { return v < r.first; });
    return it != spans && c <= (it - 1)->last;
}

// Control, format, private use and surrogate code points (tab, LF and CR
// are whitespace first).
bool is_control(uint32_t c) { return in_spans(kControlCharacters, kControlCharacterCount, c); }

bool is_nonspacing_mark(uint32_t c) { return in_spans(kNonspacingMarks, kNonspacingMarkCount, c); }

// llama.cpp's NFD keeps one code point for one: the first of the full
// decomposition (a precomposed letter's base, a Hangul syllable's leading
// consonant).
uint32_t nfd_first(uint32_t c) {
    if (c < 0xC0) return c;
    std::vector<uint32_t> one{c};
    nfd_normalize(one);
    return one.front();
}

uint32_t simple_lowercase(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    const LowercaseMapping* end = kLowercaseMappings + kLowercaseMappingCount;
    const LowercaseMapping* it =
        std::lower_bound(kLowercaseMappings, end, c, [](const LowercaseMapping& m, uint32_t v) { return m.cpt < v; });
    return it != end && it->cpt == c ? it->lower : c;
}

bool is_bert_punctuation(uint32_t c) {
    const bool ascii_punct = (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                             (c >= 0x7B && c <= 0x7E);
    return ascii_punct || (codepoint_class(c) & kClassPunctuation) != 0;
}

constexpr uint32_t kCapitalIWithDot = 0x130;
constexpr uint32_t kCombiningDotAbove = 0x307;

}  // namespace

std::string bert_normalize(const std::string& text, const BertNormalizerOptions& options) {
    std::vector<uint32_t> cpts;
    decode_utf8_lenient(text, cpts);
    std::vector<uint32_t> out;
    out.reserve(cpts.size());
    for (uint32_t c : cpts) {
        if (options.clean_text) {
            // Hugging Face drops every control character but tab, LF and CR
            // (vertical tab, form feed and NEL too); llama.cpp tests for
            // whitespace first.
            const bool whitespace = is_whitespace(c);
            const bool kept_as_space = options.llama_cpp ? whitespace : c == '\t' || c == '\n' || c == '\r';
            if (c == 0 || c == kReplacementChar || (is_control(c) && !kept_as_space)) continue;
            if (whitespace) c = ' ';
        }
        if (options.handle_chinese_chars && is_chinese_char(c)) {
            out.insert(out.end(), {' ', c, ' '});
        } else {
            out.push_back(c);
        }
    }
    if (options.strip_accents) {
        if (options.llama_cpp) {
            for (uint32_t& c : out) c = nfd_first(c);
        } else {
            nfd_normalize(out);
        }
        out.erase(std::remove_if(out.begin(), out.end(),
                                 [&](uint32_t c) {
                                     return options.llama_cpp ? (codepoint_class(c) & kClassMark) != 0
                                                              : is_nonspacing_mark(c);
                                 }),
                  out.end());
    }
    std::string result;
    result.reserve(text.size());
    for (uint32_t c : out) {
        if (options.lowercase) {
            // Rust's char::to_lowercase, which tokenizers applies, gives two
            // code points for U+0130 only.
            if (c == kCapitalIWithDot && !options.llama_cpp) {
                utf8::append(result, 'i');
                c = kCombiningDotAbove;
            } else {
                c = simple_lowercase(c);
            }
        }
        utf8::append(result, c);
    }
    return result;
}

void bert_pre_tokenize(const std::string& text, std::vector<std::string>& words) {
    std::vector<uint32_t> cpts;
    decode_utf8_lenient(text, cpts);
    std::string word;
    auto finish = [&] {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
    };
    for (uint32_t c : cpts) {
        if (is_whitespace(c)) {
            finish();
        } else if (is_bert_punctuation(c)) {
            finish();
            utf8::append(word, c);
            finish();
        } else {
            utf8::append(word, c);
        }
    }
    finish();
}

}  // namespace vllm
