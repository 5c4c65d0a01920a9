// An ordered JSON value, its strict parser and its serializer.
//
// Objects keep their members in insertion order (OpenAI responses and the
// chat templates' `tojson` print keys in the order they were given), and
// numbers print the way Python's json.dumps prints them, so that rendered
// chat templates match transformers byte for byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vllm::json {

enum class Kind { Null, Bool, Int, Float, String, Array, Object };

// "null", "bool", "int", "float", "string", "array", "object".
const char* kind_name(Kind kind);

class Value {
public:
    using Member = std::pair<std::string, Value>;

    Value() = default;
    Value(std::nullptr_t) {}
    Value(bool b) : kind_(Kind::Bool), bool_(b) {}
    Value(int i) : kind_(Kind::Int), int_(i) {}
    Value(int64_t i) : kind_(Kind::Int), int_(i) {}
    Value(double d) : kind_(Kind::Float), float_(d) {}
    Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
    Value(const char* s) : kind_(Kind::String), string_(s) {}
    Value(std::string_view s) : kind_(Kind::String), string_(s) {}

    static Value array();
    static Value object();

    Kind kind() const { return kind_; }
    bool is_null() const { return kind_ == Kind::Null; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_array() const { return kind_ == Kind::Array; }
    bool is_object() const { return kind_ == Kind::Object; }

    // Wrong kind: INVALID_ARGUMENT naming the expected and the actual kind.
    bool as_bool() const;
    int64_t as_int() const;
    double as_double() const;  // int or float
    const std::string& as_string() const;

    // Array elements.
    const std::vector<Value>& items() const;
    std::vector<Value>& items();
    void push_back(Value v);

    // Object members in insertion order.
    const std::vector<Member>& members() const;
    std::vector<Member>& members();
    const Value* find(std::string_view key) const;  // nullptr when absent
    Value* find(std::string_view key);
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    Value& set(std::string key, Value v);  // replaces in place, or appends
    bool erase(std::string_view key);      // false when absent

    // Elements of an array, members of an object, bytes of a string.
    size_t size() const;

    // Python's ==: 1 == 1.0, objects compare regardless of member order.
    bool operator==(const Value& other) const;
    bool operator!=(const Value& other) const { return !(*this == other); }

private:
    [[noreturn]] void wrong_kind(const char* wanted) const;

    Kind kind_ = Kind::Null;
    bool bool_ = false;
    int64_t int_ = 0;
    double float_ = 0.0;
    std::string string_;
    std::vector<Value> items_;
    std::vector<Member> members_;
};

// Strict RFC 8259: one value, UTF-8 validated, \u escapes with surrogate
// pairs, nesting at most max_depth deep. Integers that do not fit int64 are
// read as floats. Duplicate keys keep the first position and the last value
// (as Python's json.loads). Errors: INVALID_ARGUMENT
// "invalid JSON at line L column C: <what>" (column counts bytes from 1).
constexpr int kMaxDepth = 256;
Value parse(std::string_view text);

struct DumpOptions {
    int indent = -1;                 // < 0: one line; >= 0: newline and this many spaces per level
    bool python_separators = false;  // Python json.dumps' ", " / ": " (with indent: "," / ": ")
    bool ensure_ascii = false;       // escape everything above 0x7E as \uXXXX (surrogate pairs)
};
// Default: compact (",", ":"). Floats print as Python's repr(float) (shortest
// round trip: 1.0, 1e+16, 1.5e-05); non-finite floats as Python's json.dumps
// does (NaN, Infinity, -Infinity). ensure_ascii needs valid UTF-8 strings.
std::string dump(const Value& value, const DumpOptions& options = {});

// Python's repr(float), e.g. 0.1 -> "0.1", 1e16 -> "1e+16", 2.0 -> "2.0".
std::string format_float(double d);

// A JSON string literal (quotes included) with json.dumps' escaping.
void append_quoted(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace vllm::json
