#include "structured/gbnf_parser.h"

#include <vector>

#include "util/error.h"
#include "util/recursion_budget.h"
#include "util/utf8.h"

namespace vllm::structured {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
public:
    explicit GbnfParser(std::string_view text) : text_(text), builder_("GBNF") {}

    std::shared_ptr<const Grammar> parse(const std::string& root) {
        skip_space(true);
        if (at_end()) throw_invalid_argument("GBNF: the grammar is empty (no rules)");
        while (!at_end()) {
            parse_rule();
            skip_space(true);
        }
        return builder_.build(root);
    }

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    [[noreturn]] void syntax_error(const std::string& what) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw_invalid_argument("GBNF syntax error at line " + std::to_string(line) + " column " +
                               std::to_string(column) + ": " + what);
    }

    // Spaces, tabs, comments, and newlines when `newlines` (else a newline ends the rule).
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        if (pos_ == start) syntax_error("expected a rule name");
        return std::string(text_.substr(start, pos_ - start));
    }

    void parse_rule() {
        const std::string name = parse_name();
        skip_space(false);
        if (text_.substr(pos_, 3) != "::=") syntax_error("expected '::=' after rule name '" + name + "'");
        pos_ += 3;
        skip_space(true);
        current_rule_ = builder_.rule(name);
        rule_name_ = name;
        if (builder_.is_defined(current_rule_)) syntax_error("rule '" + name + "' is defined twice");
        std::vector<Sequence> alternatives = parse_alternatives(false);
        builder_.define(current_rule_, std::move(alternatives));
        if (!at_end() && peek() != '\n' && peek() != '\r')
            syntax_error(std::string("unexpected '") + peek() + "' in rule '" + name + "'");
    }

    std::vector<Sequence> parse_alternatives(bool nested) {
        std::vector<Sequence> alternatives;
        alternatives.push_back(parse_sequence(nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alternatives.push_back(parse_sequence(nested));
        }
        return alternatives;
    }

    Sequence parse_sequence(bool nested) {
        Sequence seq;
        while (!at_end()) {
            const char c = peek();
            if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
            Sequence item = parse_primary();
            skip_space(nested);
            item = parse_quantifier(item, nested);
            seq.insert(seq.end(), item.begin(), item.end());
        }
        return seq;
    }

    Sequence parse_primary() {
        const char c = peek();
        if (c == '"') return parse_literal();
        if (c == '[') return {parse_class()};
        if (c == '.') {
            ++pos_;
            return {builder_.char_class({{0, kMaxCodepoint}}, rule_name_)};
        }
        if (c == '(') {
            static constexpr RecursionLimit kGroups{"a group", kMaxGroupNesting};
            const RecursionGuard guard(kGroups, group_depth_, [&](const std::string& why) { syntax_error(why); });
            ++pos_;
            skip_space(true);
            std::vector<Sequence> alternatives = parse_alternatives(true);
            if (peek() != ')') syntax_error("expected ')' to close the group");
            ++pos_;
            // A one-alternative group splices in; a quantifier wraps it later if needed.
            if (alternatives.size() == 1) return alternatives[0];
            return {builder_.ref(builder_.add_helper_rule(rule_name_, std::move(alternatives)))};
        }
        if (is_name_char(c)) {
            const int32_t id = builder_.rule(parse_name());
            builder_.note_reference(id, current_rule_);
            return {builder_.ref(id)};
        }
        syntax_error(std::string("unexpected '") + c + "'");
    }

    Sequence parse_quantifier(const Sequence& item, bool nested) {
        const char c = peek();
        int64_t min = 0, max = 0;
        if (c == '*') {
            min = 0, max = -1;
        } else if (c == '+') {
            min = 1, max = -1;
        } else if (c == '?') {
            min = 0, max = 1;
        } else if (c == '{') {
            ++pos_;
            skip_space(nested);
            min = parse_count();
            skip_space(nested);
            max = min;
            if (peek() == ',') {
                ++pos_;
                skip_space(nested);
                max = peek() == '}' ? -1 : parse_count();
                skip_space(nested);
            }
            if (peek() != '}') syntax_error("expected '}' to close the repetition");
        } else {
            return item;
        }
        ++pos_;
        skip_space(nested);
        if (item.empty()) return item;  // repeating nothing ("()*") matches nothing
        return builder_.repeat(item, min, max, rule_name_);
    }

    int64_t parse_count() {
        const size_t start = pos_;
        int64_t value = 0;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            value = value * 10 + (peek() - '0');
            if (value > GrammarBuilder::kMaxRepetition) syntax_error("repetition count too large");
            ++pos_;
        }
        if (pos_ == start) syntax_error("expected a number in the repetition");
        return value;
    }

    // One code point of the source, UTF-8 decoded.
    uint32_t next_codepoint() {
        const unsigned char c = static_cast<unsigned char>(peek());
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || pos_ + len > text_.size()) syntax_error("invalid UTF-8");
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (int k = 1; k < len; ++k) {
            const unsigned char cc = static_cast<unsigned char>(text_[pos_ + k]);
            if ((cc & 0xC0) != 0x80) syntax_error("invalid UTF-8");
            cp = (cp << 6) | (cc & 0x3F);
        }
        static const uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMinForLength[len] || !utf8::is_scalar_value(cp))
            syntax_error("invalid UTF-8");
        pos_ += len;
        return cp;
    }

    uint32_t parse_hex(int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) syntax_error("expected " + std::to_string(digits) + " hex digits in the escape");
            value = value * 16 + d;
            ++pos_;
        }
        if (!utf8::is_scalar_value(value))
            syntax_error("escape is not a Unicode scalar value");
        return value;
    }

    // A character of a literal or class, escapes resolved.
    uint32_t parse_char() {
        if (at_end()) syntax_error("unexpected end of the grammar");
        if (peek() != '\\') return next_codepoint();
        ++pos_;
        const char c = peek();
        ++pos_;
        switch (c) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^': return static_cast<uint8_t>(c);
            case 'x': return parse_hex(2);
            case 'u': return parse_hex(4);
            case 'U': return parse_hex(8);
            default:
                --pos_;
                syntax_error(std::string("unknown escape '\\") + c + "'");
        }
    }

    Sequence parse_literal() {
        ++pos_;  // "
        std::string bytes;
        while (true) {
            if (at_end() || peek() == '\n') syntax_error("unterminated string literal");
            if (peek() == '"') break;
            utf8::append(bytes, parse_char());
        }
        ++pos_;
        return builder_.literal(bytes);
    }

    Element parse_class() {
        ++pos_;  // [
        bool negated = false;
        if (peek() == '^') {
            negated = true;
            ++pos_;
        }
        std::vector<CodepointRange> ranges;
        while (true) {
            if (at_end() || peek() == '\n') syntax_error("unterminated character class");
            if (peek() == ']') break;
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                hi = parse_char();
                if (hi < lo) syntax_error("character range is out of order");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;
        return builder_.char_class(negated ? complement_ranges(ranges) : ranges, rule_name_);
    }

    std::string_view text_;
    size_t pos_ = 0;
    int group_depth_ = 0;
    GrammarBuilder builder_;
    int32_t current_rule_ = -1;
    std::string rule_name_;  // of the rule being parsed: helper rules are named after it
};

}  // namespace

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const std::string& root) {
    return GbnfParser(text).parse(root);
}

}  // namespace vllm::structured
