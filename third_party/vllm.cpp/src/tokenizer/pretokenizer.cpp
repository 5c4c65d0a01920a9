#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode.h"

namespace vllm {

namespace {

struct NamedSpec {
    const char* name;
    PreTokenizerSpec spec;
};

// The names llama.cpp (llama-vocab.cpp) maps to these regex sets.
const NamedSpec kNamedSpecs[] = {
    {"", {PreTokenizerKind::DEFAULT, false, false}},
    {"default", {PreTokenizerKind::DEFAULT, false, false}},
    {"gpt-2", {PreTokenizerKind::GPT2, false, false}},
    {"gpt2", {PreTokenizerKind::GPT2, false, false}},
    {"phi-2", {PreTokenizerKind::GPT2, false, false}},
    {"mpt", {PreTokenizerKind::GPT2, false, false}},
    {"olmo", {PreTokenizerKind::GPT2, false, false}},
    {"jais", {PreTokenizerKind::GPT2, false, false}},
    {"exaone4", {PreTokenizerKind::GPT2, false, false}},
    {"smollm", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"starcoder", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"refact", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"command-r", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"codeshell", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"exaone", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"minerva-7b", {PreTokenizerKind::GPT2_SINGLE_DIGITS, false, false}},
    {"llama3", {PreTokenizerKind::LLAMA3, true, true}},
    {"llama-v3", {PreTokenizerKind::LLAMA3, true, true}},
    {"llama-bpe", {PreTokenizerKind::LLAMA3, true, true}},
    {"falcon3", {PreTokenizerKind::LLAMA3, true, true}},
    {"dbrx", {PreTokenizerKind::LLAMA3, false, false}},
    {"smaug-bpe", {PreTokenizerKind::LLAMA3, false, false}},
    {"qwen2", {PreTokenizerKind::QWEN2, false, false}},
    {"deepseek-r1-qwen", {PreTokenizerKind::QWEN2, false, false}},
    {"stablelm2", {PreTokenizerKind::QWEN2, false, false}},
    {"megrez", {PreTokenizerKind::QWEN2, false, false}},
};

// Code point index ranges [begin, end): the pieces between passes.
struct Span {
    uint32_t begin;
    uint32_t end;
};
using Spans = std::vector<Span>;

struct Codepoints {
    std::vector<uint32_t> cpt;
    std::vector<uint8_t> cls;

    bool letter(uint32_t i) const { return cls[i] & kClassLetter; }
    bool number(uint32_t i) const { return cls[i] & kClassNumber; }
    bool space(uint32_t i) const { return cls[i] & kClassWhitespace; }
    // Neither \s, \p{L} nor \p{N}.
    bool other(uint32_t i) const { return !(cls[i] & (kClassLetter | kClassNumber | kClassWhitespace)); }
    bool newline(uint32_t i) const { return cpt[i] == '\r' || cpt[i] == '\n'; }
};

// A regex applied with a match iterator (llama.cpp's std::regex passes):
// matches and the gaps between them both become pieces. `match(pos, end)`
// returns the end of a match starting at pos, or pos for none.
template <typename Match>
void split_by_matches(const Spans& in, Spans& out, Match match) {
    out.clear();
    for (const Span& s : in) {
        uint32_t gap = s.begin;
        uint32_t p = s.begin;
        while (p < s.end) {
            const uint32_t m = match(p, s.end);
            if (m == p) {
                ++p;
                continue;
            }
            if (gap < p) out.push_back({gap, p});
            out.push_back({p, m});
            p = gap = m;
        }
        if (gap < s.end) out.push_back({gap, s.end});
    }
}

// A regex whose alternatives match everywhere (llama.cpp's hand-written
// GPT-2 and LLAMA3 splitters): consecutive matches tile each piece.
// `next(pos, end)` returns the end of the match at pos (> pos).
template <typename Next>
void split_by_scanner(const Spans& in, Spans& out, Next next) {
    out.clear();
    for (const Span& s : in) {
        for (uint32_t p = s.begin; p < s.end;) {
            const uint32_t e = next(p, s.end);
            out.push_back({p, e});
            p = e;
        }
    }
}

// 's|'t|'re|'ve|'m|'ll|'d, case-insensitive for LLAMA3.
uint32_t match_contraction(const Codepoints& t, uint32_t pos, uint32_t end, bool ignore_case) {
    if (t.cpt[pos] != '\'' || pos + 1 >= end) return pos;
    auto lower = [&](uint32_t c) { return ignore_case && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; };
    const uint32_t a = lower(t.cpt[pos + 1]);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
    if (pos + 2 >= end) return pos;
    const uint32_t b = lower(t.cpt[pos + 2]);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
    return pos;
}

// A whitespace run at pos. \s+(?!\S) gives back the last whitespace when a
// non-space follows inside the piece, so it can lead the next word; at
// the end of a piece the whole run stays together.
uint32_t match_whitespace(const Codepoints& t, uint32_t pos, uint32_t end) {
    uint32_t p = pos;
    while (p < end && t.space(p)) ++p;
    return (p - pos > 1 && p < end) ? p - 1 : p;
}

// Which of GPT-2's run alternatives a code point belongs to.
enum class Run { LETTER, NUMBER, OTHER, SPACE };

Run run_of(const Codepoints& t, uint32_t i) {
    if (t.space(i)) return Run::SPACE;
    if (t.letter(i)) return Run::LETTER;
    return t.number(i) ? Run::NUMBER : Run::OTHER;
}

uint32_t next_gpt2(const Codepoints& t, uint32_t pos, uint32_t end) {
    const uint32_t c = match_contraction(t, pos, end, false);
    if (c != pos) return c;
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': one space may lead a
    // run of one class.
    const uint32_t head = (t.cpt[pos] == ' ' && pos + 1 < end) ? pos + 1 : pos;
    const Run run = run_of(t, head);
    if (run == Run::SPACE) return match_whitespace(t, pos, end);
    uint32_t p = head + 1;
    while (p < end && run_of(t, p) == run) ++p;
    return p;
}

uint32_t next_llama3(const Codepoints& t, uint32_t pos, uint32_t end, uint32_t max_digits) {
    const uint32_t c = match_contraction(t, pos, end, true);
    if (c != pos) return c;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!t.newline(pos) && !t.number(pos) && (t.letter(pos) || (pos + 1 < end && t.letter(pos + 1)))) {
        uint32_t p = pos + 1;
        while (p < end && t.letter(p)) ++p;
        return p;
    }
    // \p{N}{1,max_digits}
    if (t.number(pos)) {
        uint32_t p = pos + 1;
        while (p < end && p - pos < max_digits && t.number(p)) ++p;
        return p;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    const uint32_t head = (t.cpt[pos] == ' ' && pos + 1 < end) ? pos + 1 : pos;
    if (t.other(head)) {
        uint32_t p = head + 1;
        while (p < end && t.other(p)) ++p;
        while (p < end && t.newline(p)) ++p;
        return p;
    }
    // \s*[\r\n]+ takes the run up to its last newline.
    uint32_t p = pos;
    uint32_t after_newline = pos;
    while (p < end && t.space(p)) {
        if (t.newline(p)) after_newline = p + 1;
        ++p;
    }
    if (after_newline != pos) return after_newline;
    return match_whitespace(t, pos, end);
}

// [\p{P}\$\+<=>\^~\|]: as llama.cpp's collapsed regex sees it, every ASCII
// punctuation or symbol character but the backtick, plus non-ASCII \p{P}.
bool default_punctuation(const Codepoints& t, uint32_t i) {
    const uint32_t c = t.cpt[i];
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x5F) || (c >= 0x7B && c <= 0x7E);
    return t.cls[i] & kClassPunctuation;
}

bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }

void split_codepoints(PreTokenizerKind kind, const Codepoints& t, Spans& spans) {
    Spans tmp;
    auto pass = [&](auto&& apply) {
        apply(spans, tmp);
        spans.swap(tmp);
    };
    auto gpt2 = [&](const Spans& in, Spans& out) {
        split_by_scanner(in, out, [&](uint32_t p, uint32_t e) { return next_gpt2(t, p, e); });
    };
    switch (kind) {
        case PreTokenizerKind::GPT2:
            pass(gpt2);
            break;
        case PreTokenizerKind::GPT2_SINGLE_DIGITS:
            pass([&](const Spans& in, Spans& out) {
                split_by_matches(in, out, [&](uint32_t p, uint32_t) { return t.number(p) ? p + 1 : p; });
            });
            pass(gpt2);
            break;
        case PreTokenizerKind::LLAMA3:
        case PreTokenizerKind::QWEN2: {
            const uint32_t max_digits = kind == PreTokenizerKind::LLAMA3 ? 3 : 1;
            pass([&](const Spans& in, Spans& out) {
                split_by_scanner(in, out, [&](uint32_t p, uint32_t e) { return next_llama3(t, p, e, max_digits); });
            });
            break;
        }
        case PreTokenizerKind::DEFAULT:
            pass([&](const Spans& in, Spans& out) {
                split_by_matches(in, out, [&](uint32_t p, uint32_t e) {
                    while (p < e && default_punctuation(t, p)) ++p;
                    return p;
                });
            });
            pass(gpt2);
            pass([&](const Spans& in, Spans& out) {
                split_by_matches(in, out, [&](uint32_t p, uint32_t e) {
                    while (p < e && t.number(p)) ++p;
                    return p;
                });
            });
            pass([&](const Spans& in, Spans& out) {
                split_by_matches(in, out, [&](uint32_t p, uint32_t e) {
                    const bool three = p + 3 <= e && ascii_digit(t.cpt[p]) && ascii_digit(t.cpt[p + 1]) &&
                                       ascii_digit(t.cpt[p + 2]);
                    return three ? p + 3 : p;
                });
            });
            break;
    }
}

}  // namespace

bool find_pretokenizer(const std::string& name, PreTokenizerSpec& spec) {
    for (const NamedSpec& n : kNamedSpecs) {
        if (name == n.name) {
            spec = n.spec;
            return true;
        }
    }
    return false;
}

void PreTokenizer::split(const std::string& text, std::string& normalized, std::vector<Word>& words) const {
    Codepoints t;
    decode_utf8_lenient(text, t.cpt);
    const uint32_t n = static_cast<uint32_t>(t.cpt.size());
    t.cls.resize(n);
    // Byte offset of each code point in `normalized`, plus the end.
    std::vector<uint32_t> offset(n + 1);
    normalized.clear();
    normalized.reserve(text.size());
    for (uint32_t i = 0; i < n; ++i) {
        t.cls[i] = codepoint_class(t.cpt[i]);
        offset[i] = static_cast<uint32_t>(normalized.size());
        append_utf8(t.cpt[i], normalized);
    }
    offset[n] = static_cast<uint32_t>(normalized.size());

    Spans spans;
    if (n > 0) spans.push_back({0, n});
    split_codepoints(kind_, t, spans);

    words.clear();
    words.reserve(spans.size());
    for (const Span& s : spans) words.push_back({offset[s.begin], offset[s.end]});
}

}  // namespace vllm
