#include "chat/tool_parsers/python_calls.h"
#include "util/recursion_budget.h"
#include "util/utf8.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace vllm::chat {

namespace {

// Thrown inside the reader only; parse_python_call_list turns it into nullopt.
struct NotACallList {};

class PythonCallReader {
public:
    explicit PythonCallReader(std::string_view text) : text_(text) {}

    std::vector<PythonCall> read_list() {
        std::vector<PythonCall> calls;
        expect('[');
        while (!try_consume(']')) {
            calls.push_back(read_call());
            if (!try_consume(',')) {
                expect(']');
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) throw NotACallList{};
        return calls;
    }

    json::Value read_whole_literal() {
        json::Value value = read_value();
        skip_space();
        if (pos_ != text_.size()) throw NotACallList{};
        return value;
    }

private:
    PythonCall read_call() {
        PythonCall call{read_identifier(), json::Value::object()};
        expect('(');
        while (!try_consume(')')) {
            std::string keyword = read_identifier();
            expect('=');
            if (call.arguments.contains(keyword)) throw NotACallList{};  // Python: repeated keyword argument
            call.arguments.set(std::move(keyword), read_value());
            if (!try_consume(',')) {
                expect(')');
                break;
            }
        }
        return call;
    }

    json::Value read_value() {
        // Literals nest as deep as JSON may (json::kMaxDepth, or what this
        // thread's stack allows); deeper text is no call list the engine
        // would run, so it stays content.
        static constexpr RecursionLimit kNesting{"a Python literal in a tool call", json::kMaxDepth};
        const RecursionGuard guard(kNesting, depth_, [](const std::string&) { throw NotACallList{}; });
        skip_space();
        if (pos_ >= text_.size()) throw NotACallList{};
        const char c = text_[pos_];
        if (c == '\'' || c == '"') return read_string();
        if (c == '[') return read_list_literal();
        if (c == '{') return read_dict();
        if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return read_number();
        const std::string word = read_identifier();
        if (word == "True") return true;
        if (word == "False") return false;
        if (word == "None") return nullptr;
        throw NotACallList{};  // a variable or expression, not a literal
    }

    json::Value read_list_literal() {
        json::Value list = json::Value::array();
        expect('[');
        while (!try_consume(']')) {
            list.push_back(read_value());
            if (!try_consume(',')) {
                expect(']');
                break;
            }
        }
        return list;
    }

    json::Value read_dict() {
        json::Value dict = json::Value::object();
        expect('{');
        while (!try_consume('}')) {
            const json::Value key = read_value();
            // json.dumps writes integer keys as their decimal text.
            if (key.is_string()) {
                expect(':');
                dict.set(key.as_string(), read_value());
            } else if (key.is_int()) {
                expect(':');
                dict.set(std::to_string(key.as_int()), read_value());
            } else {
                throw NotACallList{};
            }
            if (!try_consume(',')) {
                expect('}');
                break;
            }
        }
        return dict;
    }

    json::Value read_number() {
        const size_t start = pos_;
        if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
        bool is_float = false;
        bool digits = false;
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c >= '0' && c <= '9') {
                digits = true;
            } else if (c == '.' || c == 'e' || c == 'E') {
                is_float = true;
                if ((c == 'e' || c == 'E') && pos_ + 1 < text_.size() &&
                    (text_[pos_ + 1] == '-' || text_[pos_ + 1] == '+'))
                    ++pos_;
            } else {
                break;
            }
            ++pos_;
        }
        if (!digits) throw NotACallList{};
        const std::string literal(text_.substr(start, pos_ - start));
        char* end = nullptr;
        errno = 0;
        if (!is_float) {
            const long long i = std::strtoll(literal.c_str(), &end, 10);
            if (errno == 0 && *end == '\0') return static_cast<int64_t>(i);
            errno = 0;  // beyond int64: Python keeps it exact; the nearest double is what JSON can carry here
        }
        const double d = std::strtod(literal.c_str(), &end);
        if (*end != '\0') throw NotACallList{};
        return d;
    }

    json::Value read_string() {
        const char quote = text_[pos_++];
        std::string out;
        while (true) {
            if (pos_ >= text_.size()) throw NotACallList{};
            const char c = text_[pos_++];
            if (c == quote) break;
            if (c == '\n') throw NotACallList{};  // unterminated single-line string
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= text_.size()) throw NotACallList{};
            const char e = text_[pos_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'v': out += '\v'; break;
                case '0': out += '\0'; break;
                case '\\': case '\'': case '"': out += e; break;
                case '\n': break;  // line continuation
                case 'x': append_code_point(out, read_hex(2)); break;
                case 'u': append_code_point(out, read_hex(4)); break;
                case 'U': append_code_point(out, read_hex(8)); break;
                default:  // Python keeps unknown escapes as written
                    out += '\\';
                    out += e;
            }
        }
        return out;
    }

    uint32_t read_hex(size_t digits) {
        if (pos_ + digits > text_.size()) throw NotACallList{};
        uint32_t value = 0;
        for (size_t i = 0; i < digits; ++i) {
            const char c = text_[pos_++];
            value <<= 4;
            if (c >= '0' && c <= '9') value |= c - '0';
            else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
            else throw NotACallList{};
        }
        return value;
    }

    // Lone surrogates have no UTF-8 form, so a string holding one is refused.
    static void append_code_point(std::string& out, uint32_t cp) {
        if (!utf8::is_scalar_value(cp)) throw NotACallList{};
        utf8::append(out, cp);
    }

    std::string read_identifier() {
        skip_space();
        const size_t start = pos_;
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
            if (!letter && !(pos_ > start && c >= '0' && c <= '9')) break;
            ++pos_;
        }
        if (pos_ == start) throw NotACallList{};
        return std::string(text_.substr(start, pos_ - start));
    }

    void skip_space() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
            ++pos_;
    }

    bool try_consume(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void expect(char c) {
        if (!try_consume(c)) throw NotACallList{};
    }

    std::string_view text_;
    size_t pos_ = 0;
    int depth_ = 0;  // literals open at pos_
};

}  // namespace

std::optional<std::vector<PythonCall>> parse_python_call_list(std::string_view text) {
    try {
        return PythonCallReader(text).read_list();
    } catch (const NotACallList&) {
        return std::nullopt;
    }
}

std::optional<json::Value> parse_python_literal(std::string_view text) {
    try {
        return PythonCallReader(text).read_whole_literal();
    } catch (const NotACallList&) {
        return std::nullopt;
    }
}

}  // namespace vllm::chat
