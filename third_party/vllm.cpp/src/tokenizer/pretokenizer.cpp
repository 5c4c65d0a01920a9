#include "tokenizer/pretokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "util/utf8.h"

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
    {"falcon", {PreTokenizerKind::FALCON, false, false}},
    {"deepseek-llm", {PreTokenizerKind::DEEPSEEK_LLM, false, false}},
    {"deepseek-coder", {PreTokenizerKind::DEEPSEEK_CODER, false, false}},
    {"deepseek-v3", {PreTokenizerKind::DEEPSEEK3, false, false}},
    {"tekken", {PreTokenizerKind::TEKKEN, true, true}},
    {"qwen35", {PreTokenizerKind::QWEN35, false, false}},
    {"chatglm-bpe", {PreTokenizerKind::LLAMA3, false, false}},
    {"glm4", {PreTokenizerKind::LLAMA3, true, false}},
    {"glm5", {PreTokenizerKind::LLAMA3, true, false}},
    {"gpt-4o", {PreTokenizerKind::GPT4O, false, false}},
    {"llama4", {PreTokenizerKind::GPT4O, false, false}},
    {"minimax-m2", {PreTokenizerKind::GPT4O, false, false}},
    {"kimi-k2", {PreTokenizerKind::KIMI_K2, false, false}},
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
    bool punctuation(uint32_t i) const { return cls[i] & kClassPunctuation; }
    bool symbol(uint32_t i) const { return cls[i] & kClassSymbol; }
    bool mark(uint32_t i) const { return cls[i] & kClassMark; }
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
            // At least one code point, should a matcher miss a class.
            const uint32_t e = std::max(next(p, s.end), p + 1);
            out.push_back({p, e});
            p = e;
        }
    }
}

// The end of the run of code points in_run from pos.
template <typename Pred>
uint32_t match_run(uint32_t pos, uint32_t end, Pred in_run) {
    while (pos < end && in_run(pos)) ++pos;
    return pos;
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

// The whitespace alternatives every Llama-3-like regex ends with:
// \s*[\r\n]+ (up to the run's last newline), then \s+(?!\S), then \s+.
uint32_t match_trailing_whitespace(const Codepoints& t, uint32_t pos, uint32_t end) {
    uint32_t p = pos;
    uint32_t after_newline = pos;
    while (p < end && t.space(p)) {
        if (t.newline(p)) after_newline = p + 1;
        ++p;
    }
    if (after_newline != pos) return after_newline;
    return match_whitespace(t, pos, end);
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

// ' ?<other>+<trailing>*', then \s*[\r\n]+|\s+(?!\S)|\s+: the alternatives
// the Llama-3-like regexes end with (`other` is [^\s\p{L}\p{N}] or narrower).
template <typename Other, typename Trailing>
uint32_t match_symbols_or_whitespace(const Codepoints& t, uint32_t pos, uint32_t end, Other other,
                                     Trailing trailing) {
    const uint32_t head = (t.cpt[pos] == ' ' && pos + 1 < end) ? pos + 1 : pos;
    if (other(head)) return match_run(match_run(head + 1, end, other), end, trailing);
    return t.space(pos) ? match_trailing_whitespace(t, pos, end) : pos;
}

// LLAMA3, QWEN2 (max_digits 1) and QWEN35 (marks_join_letters).
uint32_t next_llama3(const Codepoints& t, uint32_t pos, uint32_t end, uint32_t max_digits,
                     bool marks_join_letters = false) {
    const uint32_t c = match_contraction(t, pos, end, true);
    if (c != pos) return c;
    auto word = [&](uint32_t i) { return t.letter(i) || (marks_join_letters && t.mark(i)); };
    // [^\r\n\p{L}\p{N}]?\p{L}+ ([\p{L}\p{M}]+ for QWEN35)
    if (!t.newline(pos) && !t.number(pos) && (word(pos) || (pos + 1 < end && word(pos + 1)))) {
        return match_run(pos + 1, end, word);
    }
    // \p{N}{1,max_digits}
    if (t.number(pos)) return match_run(pos, std::min(end, pos + max_digits), [&](uint32_t i) { return t.number(i); });
    //  ?[^\s\p{L}\p{N}]+[\r\n]* ([^\s\p{L}\p{M}\p{N}] for QWEN35)
    return match_symbols_or_whitespace(
        t, pos, end, [&](uint32_t i) { return t.other(i) && !(marks_join_letters && t.mark(i)); },
        [&](uint32_t i) { return t.newline(i); });
}

// [\p{P}\$\+<=>\^~\|]: as llama.cpp's collapsed regex sees it, every ASCII
// punctuation or symbol character but the backtick, plus non-ASCII \p{P}.
bool default_punctuation(const Codepoints& t, uint32_t i) {
    const uint32_t c = t.cpt[i];
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x5F) || (c >= 0x7B && c <= 0x7E);
    return t.cls[i] & kClassPunctuation;
}

bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
bool ascii_lower(uint32_t c) { return c >= 'a' && c <= 'z'; }
bool ascii_upper(uint32_t c) { return c >= 'A' && c <= 'Z'; }

// [\p{P}\$\+<=>\^~\|`]: every ASCII punctuation or symbol character, plus
// non-ASCII \p{P}.
bool falcon_punctuation(const Codepoints& t, uint32_t i) {
    return t.cpt[i] == '`' || default_punctuation(t, i);
}

struct CodepointSpan {
    uint32_t first;
    uint32_t last;
};

template <size_t N>
bool in_spans(const CodepointSpan (&spans)[N], uint32_t c) {
    for (const CodepointSpan& s : spans) {
        if (c >= s.first && c <= s.last) return true;
    }
    return false;
}

// The letters of DeepSeek LLM's second regex (its tokenizer.json's class,
// as llama.cpp lists it): Latin, Greek, Cyrillic, Armenian, Georgian,
// Cherokee, Glagolitic, Coptic, Deseret, ... but no CJK.
const CodepointSpan kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]: note that :-~ spans the ASCII letters too.
const CodepointSpan kDeepseekPunctuation[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]
const CodepointSpan kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]
const CodepointSpan kDeepseek3Cjk[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};

// A regex class of literal code points, as llama.cpp matches it with
// std::wregex: whitespace has been replaced by U+000B, so a whitespace code
// point is never in such a class.
template <size_t N>
bool in_literal_class(const Codepoints& t, uint32_t i, const CodepointSpan (&spans)[N]) {
    return !t.space(i) && in_spans(spans, t.cpt[i]);
}

// Matchers for split_by_matches: the end of the match at pos, or pos.
// \s?X+: one leading whitespace only when X follows it.
template <typename Pred>
uint32_t match_space_then_run(const Codepoints& t, uint32_t pos, uint32_t end, Pred in_run) {
    const uint32_t head = t.space(pos) && pos + 1 < end && in_run(pos + 1) ? pos + 1 : pos;
    return in_run(head) ? match_run(head, end, in_run) : pos;
}

uint32_t match_deepseek3(const Codepoints& t, uint32_t pos, uint32_t end) {
    const uint32_t c = t.cpt[pos];
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
    const bool ascii_punct = c < 0x80 && (t.punctuation(pos) || t.symbol(pos));
    if (ascii_punct && pos + 1 < end && (ascii_lower(t.cpt[pos + 1]) || ascii_upper(t.cpt[pos + 1]))) {
        return match_run(pos + 1, end, [&](uint32_t i) { return ascii_lower(t.cpt[i]) || ascii_upper(t.cpt[i]); });
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
    auto letter_or_mark = [&](uint32_t i) { return t.letter(i) || t.mark(i); };
    const bool prefix = !t.newline(pos) && !t.letter(pos) && !t.punctuation(pos) && !t.symbol(pos);
    if (prefix && pos + 1 < end && letter_or_mark(pos + 1)) return match_run(pos + 1, end, letter_or_mark);
    if (letter_or_mark(pos)) return match_run(pos, end, letter_or_mark);
    //  ?[\p{P}\p{S}]+[\r\n]*
    auto punct_or_symbol = [&](uint32_t i) { return t.punctuation(i) || t.symbol(i); };
    const uint32_t head = c == ' ' && pos + 1 < end ? pos + 1 : pos;
    if (punct_or_symbol(head)) {
        const uint32_t p = match_run(head, end, punct_or_symbol);
        return match_run(p, end, [&](uint32_t i) { return t.newline(i); });
    }
    return t.space(pos) ? match_trailing_whitespace(t, pos, end) : pos;
}

// [^\r\n\p{L}\p{N}]?<upper>*<lower>+<contraction>?|[^\r\n\p{L}\p{N}]?<upper>+<lower>*<contraction>?
// at pos, backtracking as a regex engine does (each alternative with the
// optional prefix, then without it: a mark may be both prefix and letter);
// pos for none.
template <typename Upper, typename Lower>
uint32_t match_cased_word(const Codepoints& t, uint32_t pos, uint32_t end, Upper upper, Lower lower,
                          bool contractions) {
    const bool prefix = pos + 1 < end && !t.newline(pos) && !t.letter(pos) && !t.number(pos);
    auto suffix = [&](uint32_t e) { return contractions && e < end ? match_contraction(t, e, end, true) : e; };
    for (int alternative = 0; alternative < 2; ++alternative) {
        for (uint32_t q = prefix ? pos + 1 : pos;; q = pos) {
            const uint32_t e = match_run(q, end, upper);
            if (alternative == 0) {
                // <upper>* gives back letters until <lower>+ can match: after
                // the run, or ending right after its last lower-case letter.
                if (e < end && lower(e)) return suffix(match_run(e, end, lower));
                for (uint32_t j = e; j > q; --j) {
                    if (lower(j - 1)) return suffix(j);
                }
            } else if (e > q) {
                return suffix(match_run(e, end, lower));
            }
            if (q == pos) break;
        }
    }
    return pos;
}

// Mistral's Tekken (no contractions, single digits, llama.cpp's case: a
// non-ASCII letter is both upper and lower case) and GPT-4o's (contractions,
// \p{N}{1,3}, Unicode case with marks in both classes).
uint32_t match_case_split(const Codepoints& t, uint32_t pos, uint32_t end, bool gpt4o) {
    auto cased = [&](uint32_t i, uint8_t other_case, bool (*ascii_other)(uint32_t)) {
        if (gpt4o) return t.mark(i) || (t.letter(i) && letter_case(t.cpt[i]) != other_case);
        return t.letter(i) && !ascii_other(t.cpt[i]);
    };
    const uint32_t w = match_cased_word(
        t, pos, end, [&](uint32_t i) { return cased(i, kCaseLower, ascii_lower); },
        [&](uint32_t i) { return cased(i, kCaseUpper, ascii_upper); }, gpt4o);
    if (w != pos) return w;
    if (t.number(pos)) return match_run(pos, std::min(end, pos + (gpt4o ? 3 : 1)), [&](uint32_t i) { return t.number(i); });
    //  ?[^\s\p{L}\p{N}]+[\r\n/]*
    return match_symbols_or_whitespace(
        t, pos, end, [&](uint32_t i) { return t.other(i); },
        [&](uint32_t i) { return t.newline(i) || t.cpt[i] == '/'; });
}

// The Han code points of llama.cpp's unicode_cpt_is_han: CJK Unified
// Ideographs and their extensions A to F, and the compatibility ideographs.
const CodepointSpan kHan[] = {{0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
                              {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0x2CEB0, 0x2EBEF}, {0xF900, 0xFAFF},
                              {0x2F800, 0x2FA1F}};

uint32_t next_kimi_k2(const Codepoints& t, uint32_t pos, uint32_t end) {
    auto han = [&](uint32_t i) { return in_spans(kHan, t.cpt[i]); };
    if (han(pos)) return match_run(pos, end, han);
    // [^\r\n\p{L}\p{N}]?<letters but Han>+<contraction>?
    auto word = [&](uint32_t i) { return t.letter(i) && !han(i); };
    const bool prefix = !t.newline(pos) && !t.letter(pos) && !t.number(pos);
    if (word(pos) || (prefix && pos + 1 < end && word(pos + 1))) {
        const uint32_t p = match_run(pos + 1, end, word);
        return p < end ? match_contraction(t, p, end, true) : p;
    }
    if (t.number(pos)) return match_run(pos, std::min(end, pos + 3), [&](uint32_t i) { return t.number(i); });
    return match_symbols_or_whitespace(
        t, pos, end, [&](uint32_t i) { return t.other(i); }, [&](uint32_t i) { return t.newline(i); });
}

void split_codepoints(PreTokenizerKind kind, const Codepoints& t, Spans& spans) {
    Spans tmp;
    auto pass = [&](auto&& apply) {
        apply(spans, tmp);
        spans.swap(tmp);
    };
    // A pass of a regex that need not match everywhere.
    auto matches = [&](auto&& match) {
        pass([&](const Spans& in, Spans& out) { split_by_matches(in, out, match); });
    };
    // A pass of a regex that matches everywhere.
    auto scans = [&](auto&& next) {
        pass([&](const Spans& in, Spans& out) { split_by_scanner(in, out, next); });
    };
    auto gpt2 = [&](const Spans& in, Spans& out) {
        split_by_scanner(in, out, [&](uint32_t p, uint32_t e) { return next_gpt2(t, p, e); });
    };
    auto number = [&](uint32_t i) { return t.number(i); };
    auto letter = [&](uint32_t i) { return t.letter(i); };
    auto space = [&](uint32_t i) { return t.space(i); };
    switch (kind) {
        case PreTokenizerKind::GPT2:
            pass(gpt2);
            break;
        case PreTokenizerKind::GPT2_SINGLE_DIGITS:
            matches([&](uint32_t p, uint32_t) { return t.number(p) ? p + 1 : p; });
            pass(gpt2);
            break;
        case PreTokenizerKind::LLAMA3:
        case PreTokenizerKind::QWEN2: {
            const uint32_t max_digits = kind == PreTokenizerKind::LLAMA3 ? 3 : 1;
            scans([&](uint32_t p, uint32_t e) { return next_llama3(t, p, e, max_digits); });
            break;
        }
        case PreTokenizerKind::DEFAULT:
        case PreTokenizerKind::FALCON: {
            const bool falcon = kind == PreTokenizerKind::FALCON;
            matches([&](uint32_t p, uint32_t e) {
                return match_run(p, e, [&](uint32_t i) {
                    return falcon ? falcon_punctuation(t, i) : default_punctuation(t, i);
                });
            });
            pass(gpt2);
            if (!falcon) matches([&](uint32_t p, uint32_t e) { return match_run(p, e, number); });
            matches([&](uint32_t p, uint32_t e) {
                const bool three =
                    p + 3 <= e && ascii_digit(t.cpt[p]) && ascii_digit(t.cpt[p + 1]) && ascii_digit(t.cpt[p + 2]);
                return three ? p + 3 : p;
            });
            break;
        }
        case PreTokenizerKind::DEEPSEEK_LLM:
            matches([&](uint32_t p, uint32_t) { return t.newline(p) ? p + 1 : p; });
            matches([&](uint32_t p, uint32_t e) {
                return match_space_then_run(t, p, e, [&](uint32_t i) { return in_literal_class(t, i, kDeepseekLetters); });
            });
            matches([&](uint32_t p, uint32_t e) {
                return match_space_then_run(t, p, e,
                                            [&](uint32_t i) { return in_literal_class(t, i, kDeepseekPunctuation); });
            });
            // \s+$: a whitespace run that ends the piece.
            matches([&](uint32_t p, uint32_t e) {
                const uint32_t r = match_run(p, e, space);
                return r == e ? r : p;
            });
            matches([&](uint32_t p, uint32_t e) {
                return match_run(p, e, [&](uint32_t i) { return in_literal_class(t, i, kDeepseekCjk); });
            });
            matches([&](uint32_t p, uint32_t e) { return match_run(p, e, number); });
            break;
        case PreTokenizerKind::DEEPSEEK_CODER:
            matches([&](uint32_t p, uint32_t) { return t.newline(p) ? p + 1 : p; });
            matches([&](uint32_t p, uint32_t e) { return match_space_then_run(t, p, e, letter); });
            matches([&](uint32_t p, uint32_t e) {
                return match_space_then_run(t, p, e, [&](uint32_t i) { return t.punctuation(i); });
            });
            matches([&](uint32_t p, uint32_t e) {
                return match_run(p, e, [&](uint32_t i) { return in_literal_class(t, i, kDeepseekCjk); });
            });
            matches([&](uint32_t p, uint32_t) { return t.number(p) ? p + 1 : p; });
            break;
        case PreTokenizerKind::DEEPSEEK3:
            matches([&](uint32_t p, uint32_t e) { return match_run(p, std::min(e, p + 3), number); });
            matches([&](uint32_t p, uint32_t e) {
                return match_run(p, e, [&](uint32_t i) { return in_literal_class(t, i, kDeepseek3Cjk); });
            });
            matches([&](uint32_t p, uint32_t e) { return match_deepseek3(t, p, e); });
            break;
        case PreTokenizerKind::TEKKEN:
            matches([&](uint32_t p, uint32_t e) { return match_case_split(t, p, e, false); });
            break;
        case PreTokenizerKind::QWEN35:
            scans([&](uint32_t p, uint32_t e) { return next_llama3(t, p, e, 1, true); });
            break;
        case PreTokenizerKind::GPT4O:
            matches([&](uint32_t p, uint32_t e) { return match_case_split(t, p, e, true); });
            break;
        case PreTokenizerKind::KIMI_K2:
            scans([&](uint32_t p, uint32_t e) { return next_kimi_k2(t, p, e); });
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
        utf8::append(normalized, t.cpt[i]);
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
