#include "structured/regex.h"

#include <cstdio>
#include <vector>

#include "structured/grammar.h"
#include "structured/utf8_ranges.h"
#include "util/error.h"
#include "util/recursion_budget.h"

namespace vllm::structured {

namespace {

using Ranges = std::vector<CodepointRange>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// Python's str-pattern \s: Unicode whitespace.
const Ranges kSpace = {{0x09, 0x0D}, {0x1C, 0x20}, {0x85, 0x85}, {0xA0, 0xA0}, {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}};

Ranges ascii_complement(const Ranges& ranges) {
    Ranges out;
    for (const CodepointRange& r : complement_ranges(ranges))
        if (r.lo < 0x80) out.push_back({r.lo, std::min<uint32_t>(r.hi, 0x7F)});
    return out;
}

// Code point as a GBNF character (inside a literal or class).
std::string gbnf_char(uint32_t cp) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == ' ')
        return std::string(1, static_cast<char>(cp));
    char buf[16];
    if (cp < 0x100) {
        std::snprintf(buf, sizeof buf, "\\x%02X", cp);
    } else if (cp <= 0xFFFF) {
        std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    } else {
        std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    }
    return buf;
}

// A translated part of the pattern and whether its language has a string
// (an empty class, [^\s\S], has none, and neither does what needs one).
struct Piece {
    std::string gbnf;
    bool matches_something = true;
};

class RegexTranslator {
public:
    RegexTranslator(std::string_view pattern, const RegexOptions& options) : p_(pattern), options_(options) {}

    std::string translate() {
        size_t end = p_.size();
        if (!p_.empty() && p_[0] == '^') pos_ = 1;
        // A trailing unescaped $ (an even run of backslashes before it).
        if (end > pos_ && p_[end - 1] == '$') {
            size_t backslashes = 0;
            while (end - 1 - backslashes > 0 && p_[end - 2 - backslashes] == '\\') ++backslashes;
            if (backslashes % 2 == 0) --end;
        }
        end_ = end;
        const Piece out = parse_alternation();
        if (pos_ < end_) fail(p_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
        // Refused here, naming the pattern: compiled, it would leave a
        // grammar (or a JSON schema's string) that admits nothing.
        if (!out.matches_something) {
            const char* why = class_emptied_in_json_
                                  ? " inside a JSON string (its classes leave out '\"', '\\' and control characters)"
                                  : "";
            throw_invalid_argument("regex: the regex '" + std::string(p_) + "' matches no string" + why);
        }
        return "(" + out.gbnf + ")";
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw_invalid_argument("regex: " + what + " at position " + std::to_string(pos_));
    }
    bool at_end() const { return pos_ >= end_; }
    char peek() const { return at_end() ? '\0' : p_[pos_]; }

    Piece parse_alternation() {
        Piece out = parse_concatenation();
        while (peek() == '|') {
            ++pos_;
            const Piece branch = parse_concatenation();
            out.gbnf += " | " + branch.gbnf;
            out.matches_something = out.matches_something || branch.matches_something;
        }
        return out;
    }

    Piece parse_concatenation() {
        Piece out;
        while (!at_end() && peek() != '|' && peek() != ')') {
            const Piece atom = parse_quantifiers(parse_atom());
            if (!out.gbnf.empty()) out.gbnf += ' ';
            out.gbnf += atom.gbnf;
            out.matches_something = out.matches_something && atom.matches_something;
        }
        return out;
    }

    // Parses {m}, {m,}, {,n}, {m,n} at pos_; false (pos_ unchanged) when
    // the brace is a literal, as in Python.
    bool parse_braces(int64_t& min, int64_t& max) {
        size_t i = pos_ + 1;
        auto number = [&](int64_t& value) {
            const size_t start = i;
            value = 0;
            while (i < end_ && p_[i] >= '0' && p_[i] <= '9' && value <= 1000000) value = value * 10 + (p_[i++] - '0');
            return i > start;
        };
        int64_t lo = 0, hi = -1;
        const bool has_lo = number(lo);
        if (i < end_ && p_[i] == '}') {
            if (!has_lo) return false;
            hi = lo;
        } else if (i < end_ && p_[i] == ',') {
            ++i;
            if (!number(hi)) hi = -1;
            if (i >= end_ || p_[i] != '}') return false;
        } else {
            return false;
        }
        pos_ = i + 1;
        if (hi >= 0 && lo > hi) fail("repetition {" + std::to_string(lo) + "," + std::to_string(hi) + "} has min > max");
        min = lo;
        max = hi;
        return true;
    }

    Piece parse_quantifiers(Piece atom) {
        bool quantified = false;
        while (!at_end()) {
            const char c = peek();
            std::string suffix;
            int64_t min = 0, max = 0;
            if (c == '*' || c == '+' || c == '?') {
                suffix = std::string(1, c);
                ++pos_;
            } else if (c == '{' && parse_braces(min, max)) {
                suffix = "{" + std::to_string(min) + (max == min ? "" : "," + (max < 0 ? "" : std::to_string(max))) + "}";
            } else {
                break;
            }
            if (quantified) fail("multiple repeat");
            quantified = true;
            atom.gbnf = "(" + atom.gbnf + ")" + suffix;
            // Zero repetitions match the empty string.
            if (c == '*' || c == '?' || (c == '{' && min == 0)) atom.matches_something = true;
            // Lazy (?) and possessive (+) forms match the same strings.
            if (peek() == '?' || peek() == '+') ++pos_;
        }
        return atom;
    }

    Piece parse_atom() {
        const char c = peek();
        if (c == '(') return parse_group();
        if (c == '[') return class_expression(parse_class());
        if (c == '.') {
            ++pos_;
            return class_expression(complement_ranges({{'\n', '\n'}}));
        }
        if (c == '\\') return parse_escape_atom();
        if (c == '^' || c == '$') fail(std::string("anchor '") + c + "' is only supported at the pattern's start/end");
        if (c == '*' || c == '+' || c == '?') fail("nothing to repeat");
        if (c == '{') {
            int64_t min, max;
            const size_t saved = pos_;
            if (parse_braces(min, max)) {
                pos_ = saved;
                fail("nothing to repeat");
            }
        }
        return {literal_expression(next_codepoint())};
    }

    Piece parse_group() {
        static constexpr RecursionLimit kGroups{"a group", kMaxGroupNesting};
        const RecursionGuard guard(kGroups, group_depth_, [&](const std::string& why) { fail(why); });
        ++pos_;  // (
        if (peek() == '?') {
            if (p_.substr(pos_, 2) == "?:") {
                pos_ += 2;
            } else if (p_.substr(pos_, 3) == "?P<") {
                const size_t close = p_.find('>', pos_);
                if (close == std::string_view::npos || close >= end_) fail("unterminated group name");
                pos_ = close + 1;
            } else {
                const std::string_view construct = p_.substr(pos_ - 1, 3);
                fail("unsupported construct '" + std::string(construct) + "' (lookaround, flags and conditionals are not supported)");
            }
        }
        Piece inner = parse_alternation();
        if (peek() != ')') fail("missing ')'");
        ++pos_;
        inner.gbnf = "(" + inner.gbnf + ")";
        return inner;
    }

    uint32_t parse_hex(int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) fail("expected " + std::to_string(digits) + " hex digits");
            value = value * 16 + d;
            ++pos_;
        }
        if (value > kMaxCodepoint) fail("code point out of range");
        return value;
    }

    // After a backslash: a class (returned in `ranges`, true) or one code point.
    // \d \w \D \W stand for ASCII subsets of Python's Unicode classes; with
    // `widen` (inside a negated class, which complements them) they stand
    // for supersets instead, so that the complement stays a subset:
    // [^\d\D] is empty as in Python, not every non-ASCII character.
    bool parse_escape(Ranges& ranges, uint32_t& cp, bool in_class, bool widen = false) {
        const Ranges non_ascii = widen ? Ranges{{0x80, kMaxCodepoint}} : Ranges{};
        const auto with_non_ascii = [&](Ranges r) {
            r.insert(r.end(), non_ascii.begin(), non_ascii.end());
            return r;
        };
        ++pos_;  // backslash
        if (at_end()) fail("trailing backslash");
        const char c = peek();
        ++pos_;
        switch (c) {
            case 'd': ranges = with_non_ascii(kDigit); return true;
            case 'D': ranges = with_non_ascii(ascii_complement(kDigit)); return true;
            case 'w': ranges = with_non_ascii(kWord); return true;
            case 'W': ranges = with_non_ascii(ascii_complement(kWord)); return true;
            case 's': ranges = kSpace; return true;
            case 'S': ranges = complement_ranges(kSpace); return true;
            case 'n': cp = '\n'; return false;
            case 't': cp = '\t'; return false;
            case 'r': cp = '\r'; return false;
            case 'f': cp = '\f'; return false;
            case 'v': cp = '\v'; return false;
            case 'a': cp = '\a'; return false;
            case '0': cp = 0; return false;
            case 'x': cp = parse_hex(2); return false;
            case 'u': cp = parse_hex(4); return false;
            case 'U': cp = parse_hex(8); return false;
            case 'b':
                if (in_class) {
                    cp = '\b';
                    return false;
                }
                break;
            default:
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
                    --pos_;
                    cp = next_codepoint();
                    return false;
                }
        }
        pos_ -= 2;
        if (c >= '1' && c <= '9') fail("backreferences are not supported");
        fail(std::string("unsupported escape '\\") + c + "'");
    }

    Piece parse_escape_atom() {
        Ranges ranges;
        uint32_t cp = 0;
        if (parse_escape(ranges, cp, false)) return class_expression(ranges);
        return {literal_expression(cp)};
    }

    Ranges parse_class() {
        const size_t start = pos_;
        ++pos_;  // [
        bool negated = false;
        if (peek() == '^') {
            negated = true;
            ++pos_;
        }
        Ranges ranges;
        bool first = true;
        while (true) {
            if (at_end()) {
                pos_ = start;
                fail("unterminated character class");
            }
            if (peek() == ']' && !first) break;
            first = false;
            Ranges escaped;
            uint32_t lo;
            if (peek() == '\\') {
                if (parse_escape(escaped, lo, true, negated)) {
                    ranges.insert(ranges.end(), escaped.begin(), escaped.end());
                    continue;
                }
            } else {
                lo = next_codepoint();
            }
            uint32_t hi = lo;
            if (peek() == '-' && pos_ + 1 < end_ && p_[pos_ + 1] != ']') {
                ++pos_;
                if (peek() == '\\') {
                    if (parse_escape(escaped, hi, true)) fail("bad character range");
                } else {
                    hi = next_codepoint();
                }
                if (hi < lo) fail("bad character range");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;  // ]
        return negated ? complement_ranges(ranges) : normalize_ranges(ranges);
    }

    uint32_t next_codepoint() {
        const unsigned char c = static_cast<unsigned char>(p_[pos_]);
        const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || pos_ + len > end_) fail("invalid UTF-8");
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (int k = 1; k < len; ++k) {
            const unsigned char cc = static_cast<unsigned char>(p_[pos_ + k]);
            if ((cc & 0xC0) != 0x80) fail("invalid UTF-8");
            cp = (cp << 6) | (cc & 0x3F);
        }
        pos_ += len;
        return cp;
    }

    // What a JSON string holds for a code point: itself, or its escape.
    std::string literal_expression(uint32_t cp) const {
        if (options_.json_string_content && (cp == '"' || cp == '\\' || cp < 0x20)) {
            static const char* const kShort[] = {"b", "t", "n", nullptr, "f", "r"};  // 0x08..0x0D
            std::string escaped;
            if (cp == '"' || cp == '\\') {
                escaped = std::string(1, static_cast<char>(cp));
            } else if (cp >= 0x08 && cp <= 0x0D && kShort[cp - 0x08]) {
                escaped = kShort[cp - 0x08];
            } else {
                char buf[8];
                std::snprintf(buf, sizeof buf, "u%04X", cp);
                escaped = buf;
            }
            std::string out = "\"\\x5C";
            for (char e : escaped) out += gbnf_char(static_cast<unsigned char>(e));
            return out + "\"";
        }
        return "\"" + gbnf_char(cp) + "\"";
    }

    Piece class_expression(Ranges ranges) {
        if (options_.json_string_content && !ranges.empty()) {
            // Drop what a JSON string must escape: `"`, `\` and controls.
            Ranges allowed;
            for (const CodepointRange& r : complement_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}})) {
                for (const CodepointRange& x : ranges) {
                    const uint32_t lo = std::max(r.lo, x.lo), hi = std::min(r.hi, x.hi);
                    if (lo <= hi) allowed.push_back({lo, hi});
                }
            }
            class_emptied_in_json_ = class_emptied_in_json_ || allowed.empty();
            ranges = allowed;
        }
        std::string out = "[";
        const Ranges normal = normalize_ranges(ranges);
        for (const CodepointRange& r : normal) {
            out += gbnf_char(r.lo);
            if (r.hi != r.lo) out += "-" + gbnf_char(r.hi);
        }
        return {out + "]", !normal.empty()};
    }

    std::string_view p_;
    RegexOptions options_;
    size_t pos_ = 0;
    int group_depth_ = 0;
    bool class_emptied_in_json_ = false;  // a class had only what a JSON string must escape
    size_t end_ = 0;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, const RegexOptions& options) {
    return RegexTranslator(pattern, options).translate();
}

}  // namespace vllm::structured
