#include "util/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "util/error.h"
#include "util/recursion_budget.h"
#include "util/utf8.h"

namespace vllm::json {

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::Null: return "null";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "string";
        case Kind::Array: return "array";
        case Kind::Object: return "object";
    }
    return "?";
}

// ---------------------------------------------------------------- Value

Value Value::array() {
    Value v;
    v.kind_ = Kind::Array;
    return v;
}

Value Value::object() {
    Value v;
    v.kind_ = Kind::Object;
    return v;
}

void Value::wrong_kind(const char* wanted) const {
    throw_invalid_argument(std::string("JSON value is ") + kind_name(kind_) + ", expected " + wanted);
}

bool Value::as_bool() const {
    if (kind_ != Kind::Bool) wrong_kind("bool");
    return bool_;
}

int64_t Value::as_int() const {
    if (kind_ != Kind::Int) wrong_kind("int");
    return int_;
}

double Value::as_double() const {
    if (kind_ == Kind::Int) return static_cast<double>(int_);
    if (kind_ != Kind::Float) wrong_kind("number");
    return float_;
}

const std::string& Value::as_string() const {
    if (kind_ != Kind::String) wrong_kind("string");
    return string_;
}

const std::vector<Value>& Value::items() const {
    if (kind_ != Kind::Array) wrong_kind("array");
    return items_;
}

std::vector<Value>& Value::items() {
    if (kind_ != Kind::Array) wrong_kind("array");
    return items_;
}

void Value::push_back(Value v) { items().push_back(std::move(v)); }

const std::vector<Value::Member>& Value::members() const {
    if (kind_ != Kind::Object) wrong_kind("object");
    return members_;
}

std::vector<Value::Member>& Value::members() {
    if (kind_ != Kind::Object) wrong_kind("object");
    return members_;
}

const Value* Value::find(std::string_view key) const {
    for (const Member& m : members())
        if (m.first == key) return &m.second;
    return nullptr;
}

Value* Value::find(std::string_view key) {
    for (Member& m : members())
        if (m.first == key) return &m.second;
    return nullptr;
}

Value& Value::set(std::string key, Value v) {
    if (Value* existing = find(key)) {
        *existing = std::move(v);
        return *existing;
    }
    members_.emplace_back(std::move(key), std::move(v));
    return members_.back().second;
}

bool Value::erase(std::string_view key) {
    std::vector<Member>& ms = members();
    for (auto it = ms.begin(); it != ms.end(); ++it) {
        if (it->first == key) {
            ms.erase(it);
            return true;
        }
    }
    return false;
}

size_t Value::size() const {
    switch (kind_) {
        case Kind::String: return string_.size();
        case Kind::Array: return items_.size();
        case Kind::Object: return members_.size();
        default: wrong_kind("string, array or object");
    }
}

namespace {
// Values built in code (not parsed) have no kMaxDepth; the stack bounds them.
constexpr RecursionLimit kBuiltNesting{"a JSON value", 100000};
thread_local int compare_depth = 0;  // arrays and objects open in operator==
}  // namespace

bool Value::operator==(const Value& other) const {
    if (is_number() && other.is_number()) {
        if (kind_ == Kind::Int && other.kind_ == Kind::Int) return int_ == other.int_;
        return as_double() == other.as_double();
    }
    if (kind_ != other.kind_) return false;
    switch (kind_) {
        case Kind::Null: return true;
        case Kind::Bool: return bool_ == other.bool_;
        case Kind::String: return string_ == other.string_;
        case Kind::Array: {
            const RecursionGuard guard(kBuiltNesting, compare_depth);
            return items_ == other.items_;
        }
        case Kind::Object: {
            const RecursionGuard guard(kBuiltNesting, compare_depth);
            if (members_.size() != other.members_.size()) return false;
            for (const Member& m : members_) {
                const Value* theirs = other.find(m.first);
                if (theirs == nullptr || !(*theirs == m.second)) return false;
            }
            return true;
        }
        default: return false;  // numbers were handled above
    }
}

// ---------------------------------------------------------------- parser

namespace {

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Value parse_document() {
        skip_whitespace();
        Value v = parse_value();
        skip_whitespace();
        if (pos_ != text_.size()) fail("unexpected content after the value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw_invalid_argument("invalid JSON at line " + std::to_string(line) + " column " + std::to_string(column) +
                               ": " + what);
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    void skip_whitespace() {
        while (!at_end()) {
            char c = text_[pos_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            ++pos_;
        }
    }

    void expect_literal(const char* word) {
        size_t n = std::strlen(word);
        if (text_.substr(pos_, n) != word) fail(std::string("expected '") + word + "'");
        pos_ += n;
    }

    Value parse_value() {
        if (at_end()) fail("unexpected end of input, expected a value");
        char c = peek();
        switch (c) {
            case '{': return parse_object();
            case '[': return parse_array();
            case '"': return Value(parse_string());
            case 't': expect_literal("true"); return Value(true);
            case 'f': expect_literal("false"); return Value(false);
            case 'n': expect_literal("null"); return Value(nullptr);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
                fail(std::string("unexpected character ") + describe(c) + ", expected a value");
        }
    }

    static std::string describe(char c) {
        unsigned char u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7F) return std::string("'") + c + "'";
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02X", u);
        return buf;
    }

    static constexpr RecursionLimit kNesting{"JSON", kMaxDepth};

    Value parse_array() {
        const RecursionGuard guard(kNesting, depth_, [&](const std::string& why) { fail(why); });
        ++pos_;  // '['
        Value out = Value::array();
        skip_whitespace();
        if (peek() == ']') {
            ++pos_;
            return out;
        }
        for (;;) {
            skip_whitespace();
            out.push_back(parse_value());
            skip_whitespace();
            char c = peek();
            if (c == ',') {
                ++pos_;
            } else if (c == ']') {
                ++pos_;
                return out;
            } else {
                fail(at_end() ? "unexpected end of input in an array" : "expected ',' or ']' in an array");
            }
        }
    }

    Value parse_object() {
        const RecursionGuard guard(kNesting, depth_, [&](const std::string& why) { fail(why); });
        ++pos_;  // '{'
        Value out = Value::object();
        std::vector<Value::Member>& members = out.members();
        // Large objects get a key index so that duplicate detection stays linear.
        constexpr size_t kIndexFrom = 16;
        std::unordered_map<std::string, size_t> index;
        skip_whitespace();
        if (peek() == '}') {
            ++pos_;
            return out;
        }
        for (;;) {
            skip_whitespace();
            if (peek() != '"') fail(at_end() ? "unexpected end of input in an object" : "expected a string key");
            std::string key = parse_string();
            skip_whitespace();
            if (peek() != ':') fail("expected ':' after an object key");
            ++pos_;
            skip_whitespace();
            Value v = parse_value();
            insert_member(members, index, kIndexFrom, std::move(key), std::move(v));
            skip_whitespace();
            char c = peek();
            if (c == ',') {
                ++pos_;
            } else if (c == '}') {
                ++pos_;
                return out;
            } else {
                fail(at_end() ? "unexpected end of input in an object" : "expected ',' or '}' in an object");
            }
        }
    }

    static void insert_member(std::vector<Value::Member>& members, std::unordered_map<std::string, size_t>& index,
                              size_t index_from, std::string key, Value v) {
        if (members.size() < index_from) {
            for (Value::Member& m : members) {
                if (m.first == key) {
                    m.second = std::move(v);
                    return;
                }
            }
            members.emplace_back(std::move(key), std::move(v));
            if (members.size() == index_from)
                for (size_t i = 0; i < members.size(); ++i) index.emplace(members[i].first, i);
            return;
        }
        auto found = index.find(key);
        if (found != index.end()) {
            members[found->second].second = std::move(v);
            return;
        }
        index.emplace(key, members.size());
        members.emplace_back(std::move(key), std::move(v));
    }

    int hex_digit(char c) const {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    uint32_t parse_hex4() {
        if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            int d = hex_digit(text_[pos_ + i]);
            if (d < 0) fail("invalid hex digit in \\u escape");
            v = v * 16 + static_cast<uint32_t>(d);
        }
        pos_ += 4;
        return v;
    }

    std::string parse_string() {
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) fail("unterminated string");
            unsigned char c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail("control character " + describe(static_cast<char>(c)) + " in a string");
            if (c == '\\') {
                parse_escape(out);
            } else if (c < 0x80) {
                out += static_cast<char>(c);
                ++pos_;
            } else {
                const size_t len = utf8::sequence_length(text_, pos_);
                if (len == 0) fail("invalid UTF-8 in a string");
                out.append(text_.data() + pos_, len);
                pos_ += len;
            }
        }
    }

    void parse_escape(std::string& out) {
        size_t start = pos_;
        ++pos_;  // backslash
        if (at_end()) fail("unterminated string");
        char e = text_[pos_++];
        switch (e) {
            case '"': out += '"'; return;
            case '\\': out += '\\'; return;
            case '/': out += '/'; return;
            case 'b': out += '\b'; return;
            case 'f': out += '\f'; return;
            case 'n': out += '\n'; return;
            case 'r': out += '\r'; return;
            case 't': out += '\t'; return;
            case 'u': break;
            default: fail_at(start, std::string("invalid escape \\") + (e >= 0x20 && e < 0x7F ? std::string(1, e) : describe(e)));
        }
        uint32_t cp = parse_hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at(start, "lone low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail_at(start, "high surrogate not followed by a low surrogate");
            pos_ += 2;
            uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail_at(start, "high surrogate not followed by a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        utf8::append(out, cp);
    }

    Value parse_number() {
        size_t start = pos_;
        bool is_float = false;
        if (peek() == '-') ++pos_;
        if (peek() == '0') {
            ++pos_;
            if (peek() >= '0' && peek() <= '9') fail("leading zero in a number");
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9') ++pos_;
        } else {
            fail("expected a digit");
        }
        if (peek() == '.') {
            is_float = true;
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after the decimal point");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            is_float = true;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        const char* first = text_.data() + start;
        const char* last = text_.data() + pos_;
        if (!is_float) {
            int64_t i = 0;
            auto [ptr, ec] = std::from_chars(first, last, i);
            if (ec == std::errc() && ptr == last) return Value(i);
            // Out of int64 range: read as a float, as the value is still a number.
        }
        // strtod needs a terminated buffer; from_chars for double is not in every libstdc++.
        std::string digits(first, last);
        double d = std::strtod(digits.c_str(), nullptr);
        return Value(d);
    }

    std::string_view text_;
    size_t pos_ = 0;
    int depth_ = 0;  // arrays and objects open at pos_
};

}  // namespace

Value parse(std::string_view text) { return Parser(text).parse_document(); }

// ---------------------------------------------------------------- dump

std::string format_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    // Shortest round-trip digits in scientific form ("d.ddde±XX"), then laid
    // out the way Python's repr does: positional for 1e-4 <= |d| < 1e16.
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, result.ptr);
    bool negative = sci[0] == '-';
    size_t e_pos = sci.find('e');
    std::string mantissa = sci.substr(negative ? 1 : 0, e_pos - (negative ? 1 : 0));
    int exponent = std::atoi(sci.c_str() + e_pos + 1);
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        out += digits[0];
        if (digits.size() > 1) {
            out += '.';
            out += digits.substr(1);
        }
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_buf;
    }
    if (exponent < 0) {
        out += "0.";
        out.append(static_cast<size_t>(-exponent - 1), '0');
        return out + digits;
    }
    size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        return out + ".0";
    }
    return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

namespace {

void append_unicode_escape(std::string& out, uint32_t unit) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
}

// Decodes the UTF-8 sequence at s[i] (advancing i); throws on malformed input.
uint32_t decode_utf8(std::string_view s, size_t& i) {
    if (utf8::sequence_length(s, i) == 0)
        throw_invalid_argument("JSON dump with ensure_ascii: string is not valid UTF-8 at byte " + std::to_string(i));
    return utf8::decode(s, i);
}

}  // namespace

void append_quoted(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"': out += "\\\""; ++i; continue;
            case '\\': out += "\\\\"; ++i; continue;
            case '\n': out += "\\n"; ++i; continue;
            case '\r': out += "\\r"; ++i; continue;
            case '\t': out += "\\t"; ++i; continue;
            case '\b': out += "\\b"; ++i; continue;
            case '\f': out += "\\f"; ++i; continue;
            default: break;
        }
        if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
            append_unicode_escape(out, c);
            ++i;
        } else if (c < 0x80 || !ensure_ascii) {
            out += static_cast<char>(c);
            ++i;
        } else {
            uint32_t cp = decode_utf8(s, i);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                append_unicode_escape(out, 0xD800 + (cp >> 10));
                append_unicode_escape(out, 0xDC00 + (cp & 0x3FF));
            } else {
                append_unicode_escape(out, cp);
            }
        }
    }
    out += '"';
}

namespace {

class Dumper {
public:
    explicit Dumper(const DumpOptions& options) : options_(options) {
        if (options.indent >= 0) {
            item_separator_ = ",";
            key_separator_ = ": ";
        } else if (options.python_separators) {
            item_separator_ = ", ";
            key_separator_ = ": ";
        } else {
            item_separator_ = ",";
            key_separator_ = ":";
        }
    }

    void write(const Value& v, int level) {
        switch (v.kind()) {
            case Kind::Null: out_ += "null"; return;
            case Kind::Bool: out_ += v.as_bool() ? "true" : "false"; return;
            case Kind::Int: out_ += std::to_string(v.as_int()); return;
            case Kind::Float: write_float(v.as_double()); return;
            case Kind::String: append_quoted(out_, v.as_string(), options_.ensure_ascii); return;
            case Kind::Array: {
                const RecursionGuard guard(kBuiltNesting, depth_);
                write_array(v, level);
                return;
            }
            case Kind::Object: {
                const RecursionGuard guard(kBuiltNesting, depth_);
                write_object(v, level);
                return;
            }
        }
    }

    std::string take() { return std::move(out_); }

private:
    void write_float(double d) {
        if (std::isnan(d)) {
            out_ += "NaN";
        } else if (std::isinf(d)) {
            out_ += d > 0 ? "Infinity" : "-Infinity";
        } else {
            out_ += format_float(d);
        }
    }

    void newline(int level) {
        if (options_.indent < 0) return;
        out_ += '\n';
        out_.append(static_cast<size_t>(options_.indent) * static_cast<size_t>(level), ' ');
    }

    void write_array(const Value& v, int level) {
        const std::vector<Value>& items = v.items();
        if (items.empty()) {
            out_ += "[]";
            return;
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(level + 1);
            write(items[i], level + 1);
        }
        newline(level);
        out_ += ']';
    }

    void write_object(const Value& v, int level) {
        const std::vector<Value::Member>& members = v.members();
        if (members.empty()) {
            out_ += "{}";
            return;
        }
        out_ += '{';
        for (size_t i = 0; i < members.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(level + 1);
            append_quoted(out_, members[i].first, options_.ensure_ascii);
            out_ += key_separator_;
            write(members[i].second, level + 1);
        }
        newline(level);
        out_ += '}';
    }

    const DumpOptions& options_;
    int depth_ = 0;
    const char* item_separator_;
    const char* key_separator_;
    std::string out_;
};

}  // namespace

std::string dump(const Value& value, const DumpOptions& options) {
    Dumper dumper(options);
    dumper.write(value, 0);
    return dumper.take();
}

}  // namespace vllm::json
