#include "chat/jinja/lexer.h"

#include <cstring>

#include "chat/jinja/error.h"
#include "chat/jinja/py_str.h"
#include "util/utf8.h"

namespace vllm::chat::jinja {

namespace {

// jinja2 normalises \r\n and \r to \n and drops one trailing newline
// (keep_trailing_newline is off).
std::string normalize_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

int count_newlines(const std::string& s, size_t begin, size_t end) {
    int n = 0;
    for (size_t i = begin; i < end; ++i)
        if (s[i] == '\n') ++n;
    return n;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
public:
    explicit Lexer(std::string source) : src_(std::move(source)) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) lex_text_and_tag();
        tokens_.push_back({TokenType::End, "", line_});
        return std::move(tokens_);
    }

private:
    [[noreturn]] void fail(const std::string& message) const { throw SyntaxError(line_, message); }

    bool starts_with(size_t at, const char* s) const { return src_.compare(at, std::strlen(s), s) == 0; }

    // The next "{{", "{%" or "{#" at or after `from`, or npos.
    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            char c = i + 1 < src_.size() ? src_[i + 1] : '\0';
            if (c == '{' || c == '%' || c == '#') return i;
        }
        return std::string::npos;
    }

    // Emits `text` (src_[begin, end)) as it reads before a tag whose
    // whitespace sign is `sign`; lstrip applies before {% and {# only.
    void emit_text_before_tag(size_t begin, size_t end, char sign, bool lstrip_allowed) {
        std::string_view text(src_.data() + begin, end - begin);
        int newlines = count_newlines(src_, begin, end);
        if (sign == '-') {
            text = text.substr(0, text.size() - py::trailing_space(text));
        } else if (sign != '+' && lstrip_allowed) {
            size_t line_pos = text.rfind('\n');
            line_pos = line_pos == std::string_view::npos ? 0 : line_pos + 1;
            if (line_pos > 0 || line_starting_) {
                std::string_view tail = text.substr(line_pos);
                if (!tail.empty() && py::trailing_space(tail) == tail.size()) text = text.substr(0, line_pos);
            }
        }
        if (!text.empty()) tokens_.push_back({TokenType::Text, std::string(text), line_});
        line_ += newlines;
    }

    // After a closing delimiter: "-" eats all following whitespace; a plain
    // block or comment end eats one newline (trim_blocks).
    void after_tag_end(char sign, bool trim_newline) {
        size_t start = pos_;
        if (sign == '-') {
            pos_ += py::leading_space(std::string_view(src_).substr(pos_));
        } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
        line_ += count_newlines(src_, start, pos_);
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    void lex_text_and_tag() {
        size_t tag = find_tag(pos_);
        if (tag == std::string::npos) {
            tokens_.push_back({TokenType::Text, src_.substr(pos_), line_});
            line_ += count_newlines(src_, pos_, src_.size());
            pos_ = src_.size();
            return;
        }
        char kind = src_[tag + 1];
        char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : '\0';
        if (kind == '%' && is_raw_begin(tag + 2 + (sign ? 1 : 0))) {
            emit_text_before_tag(pos_, tag, sign, true);
            lex_raw(tag);
            return;
        }
        emit_text_before_tag(pos_, tag, sign, kind != '{');
        pos_ = tag + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            lex_comment();
        } else {
            lex_tag(kind == '{');
        }
    }

    void lex_comment() {
        size_t content = pos_;
        size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) fail("Missing end of comment tag");
        char sign = close > content && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
        line_ += count_newlines(src_, pos_, close);
        pos_ = close + 2;
        after_tag_end(sign, true);
    }

    // At `at` (after "{%" and its sign): whitespace, "raw", whitespace, then "-%}" or "%}".
    bool is_raw_begin(size_t at) const {
        while (at < src_.size() && is_tag_space(src_[at])) ++at;
        if (!starts_with(at, "raw")) return false;
        at += 3;
        while (at < src_.size() && is_tag_space(src_[at])) ++at;
        return starts_with(at, "-%}") || starts_with(at, "%}");
    }

    void lex_raw(size_t tag) {
        // The opening tag: "{%", sign, "raw", "%}" or "-%}" (which eats whitespace; no trim_blocks here).
        size_t close = src_.find("%}", tag);
        bool strip_after = src_[close - 1] == '-';
        line_ += count_newlines(src_, tag, close);
        pos_ = close + 2;
        if (strip_after) {
            size_t start = pos_;
            pos_ += py::leading_space(std::string_view(src_).substr(pos_));
            line_ += count_newlines(src_, start, pos_);
        }
        // The body runs to the first "{%", optional sign, "endraw", "%}".
        for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 2)) {
            size_t p = at + 2;
            char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : '\0';
            if (sign) ++p;
            while (p < src_.size() && is_tag_space(src_[p])) ++p;
            if (!starts_with(p, "endraw")) continue;
            p += 6;
            while (p < src_.size() && is_tag_space(src_[p])) ++p;
            char end_sign = src_[p] == '-' || src_[p] == '+' ? src_[p] : '\0';
            if (!starts_with(p + (end_sign ? 1 : 0), "%}")) continue;
            line_starting_ = false;
            emit_text_before_tag(pos_, at, sign, true);
            line_ += count_newlines(src_, at, p);
            pos_ = p + (end_sign ? 1 : 0) + 2;
            after_tag_end(end_sign, true);
            return;
        }
        fail("Missing end of raw directive");
    }

    void lex_tag(bool is_variable) {
        int start_line = line_;
        tokens_.push_back({is_variable ? TokenType::VariableBegin : TokenType::BlockBegin, "", line_});
        std::vector<char> brackets;  // open brackets: a "}}" or "%}" inside them is not the tag's end
        const char* close = is_variable ? "}}" : "%}";
        for (;;) {
            if (pos_ >= src_.size()) {
                line_ = start_line;
                fail(std::string("unexpected end of template, expected '") + close + "'");
            }
            char c = src_[pos_];
            if (brackets.empty()) {
                char sign = c == '-' || c == '+' ? c : '\0';
                if (starts_with(pos_ + (sign ? 1 : 0), close) && !(is_variable && sign == '+')) {
                    tokens_.push_back({is_variable ? TokenType::VariableEnd : TokenType::BlockEnd, "", line_});
                    pos_ += 2 + (sign ? 1 : 0);
                    after_tag_end(sign, !is_variable);
                    return;
                }
            }
            if (is_tag_space(c)) {
                if (c == '\n') ++line_;
                ++pos_;
            } else if (is_digit(c)) {
                lex_number();
            } else if (is_name_start(c)) {
                size_t start = pos_;
                while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
                tokens_.push_back({TokenType::Name, src_.substr(start, pos_ - start), line_});
            } else if (c == '\'' || c == '"') {
                lex_string(c);
            } else {
                lex_operator(brackets);
            }
        }
    }

    // Digits with optional single underscores between them.
    size_t scan_digits(size_t at) const {
        if (at >= src_.size() || !is_digit(src_[at])) return at;
        ++at;
        while (at < src_.size()) {
            if (is_digit(src_[at])) {
                ++at;
            } else if (src_[at] == '_' && at + 1 < src_.size() && is_digit(src_[at + 1])) {
                at += 2;
            } else {
                break;
            }
        }
        return at;
    }

    void lex_number() {
        size_t start = pos_;
        // Base prefixes: 0b / 0o / 0x.
        if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::strchr("bBoOxX", src_[pos_ + 1]) != nullptr &&
            src_[pos_ + 1] != '\0') {
            char base = static_cast<char>(src_[pos_ + 1] | 0x20);
            size_t at = pos_ + 2;
            auto ok = [base](char ch) {
                ch = static_cast<char>(ch | 0x20);
                if (base == 'b') return ch == '0' || ch == '1';
                if (base == 'o') return ch >= '0' && ch <= '7';
                return is_digit(ch) || (ch >= 'a' && ch <= 'f');
            };
            std::string digits;
            while (at < src_.size()) {
                if (src_[at] == '_' && at + 1 < src_.size() && ok(src_[at + 1])) {
                    ++at;
                } else if (ok(src_[at])) {
                    digits += src_[at++];
                } else {
                    break;
                }
            }
            if (!digits.empty()) {
                tokens_.push_back({TokenType::Integer, std::string("0") + base + digits, line_});
                pos_ = at;
                return;
            }
        }
        size_t end = scan_digits(pos_);
        bool is_float = false;
        if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
            end = scan_digits(end + 1);
            is_float = true;
        }
        if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
            size_t exp = end + 1;
            if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
            size_t exp_end = scan_digits(exp);
            if (exp_end > exp) {
                end = exp_end;
                is_float = true;
            }
        }
        std::string digits;
        for (size_t i = start; i < end; ++i)
            if (src_[i] != '_') digits += src_[i];
        tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, digits, line_});
        pos_ = end;
    }

    static int hex_value(char c) {
        if (is_digit(c)) return c - '0';
        c = static_cast<char>(c | 0x20);
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    }

    // Python's unicode_escape decoding of a string literal's body.
    void lex_string(char quote) {
        int start_line = line_;
        size_t i = pos_ + 1;
        std::string out;
        for (;;) {
            if (i >= src_.size()) {
                line_ = start_line;
                fail("unexpected end of string literal");
            }
            char c = src_[i];
            if (c == quote) break;
            if (c == '\n') ++line_;
            if (c != '\\') {
                out += c;
                ++i;
                continue;
            }
            if (i + 1 >= src_.size()) {  // a backslash ending the source
                line_ = start_line;
                fail("unexpected end of string literal");
            }
            char e = src_[i + 1];
            i += 2;
            switch (e) {
                case '\n': ++line_; break;  // line continuation
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x':
                case 'u':
                case 'U': {
                    int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    uint32_t cp = 0;
                    for (int k = 0; k < digits; ++k) {
                        int d = i < src_.size() ? hex_value(src_[i]) : -1;
                        if (d < 0) fail(std::string("truncated \\") + e + " escape in a string literal");
                        cp = cp * 16 + static_cast<uint32_t>(d);
                        ++i;
                    }
                    if (!utf8::is_scalar_value(cp))
                        fail("string literal escape is not a valid Unicode scalar value");
                    utf8::append(out, cp);
                    break;
                }
                case 'N': fail("\\N{...} escapes in string literals are not supported");
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t cp = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k)
                            cp = cp * 8 + static_cast<uint32_t>(src_[i++] - '0');
                        utf8::append(out, cp);
                    } else {
                        out += '\\';  // unknown escapes keep their backslash
                        i -= 1;
                    }
            }
        }
        tokens_.push_back({TokenType::String, std::move(out), start_line});
        pos_ = i + 1;
    }

    void lex_operator(std::vector<char>& brackets) {
        static const char* const kTwoChar[] = {"**", "//", "==", "!=", ">=", "<="};
        for (const char* op : kTwoChar) {
            if (starts_with(pos_, op)) {
                tokens_.push_back({TokenType::Operator, op, line_});
                pos_ += 2;
                return;
            }
        }
        char c = src_[pos_];
        if (std::strchr("+-/*%~[](){}><=.:|,;", c) == nullptr || c == '\0') {
            unsigned char u = static_cast<unsigned char>(c);
            char buf[48];
            if (u >= 0x20 && u < 0x7F) {
                std::snprintf(buf, sizeof buf, "unexpected char '%c'", c);
            } else {
                std::snprintf(buf, sizeof buf, "unexpected byte 0x%02X", u);
            }
            fail(buf);
        }
        if (c == '(' || c == '[' || c == '{') {
            brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (c == ')' || c == ']' || c == '}') {
            if (brackets.empty()) fail(std::string("unexpected '") + c + "'");
            if (brackets.back() != c) fail(std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
            brackets.pop_back();
        }
        tokens_.push_back({TokenType::Operator, std::string(1, c), line_});
        ++pos_;
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(normalize_newlines(source)).run(); }

std::string describe(const Token& token) {
    switch (token.type) {
        case TokenType::Text: return "template data / text";
        case TokenType::VariableBegin: return "begin of print statement";
        case TokenType::VariableEnd: return "end of print statement";
        case TokenType::BlockBegin: return "begin of statement block";
        case TokenType::BlockEnd: return "end of statement block";
        case TokenType::Name: return token.value;
        case TokenType::String: return "string";
        case TokenType::Integer: return "integer";
        case TokenType::Float: return "float";
        case TokenType::Operator: return token.value;
        case TokenType::End: return "end of template";
    }
    return "?";
}

}  // namespace vllm::chat::jinja
