// The values a chat template computes with, modelled on the Python objects
// jinja2 handles: None, bool, int, float, str, list, tuple, dict, jinja2's
// Undefined, and opaque objects (namespace, loop, macros, functions).
//
// Strings, lists and dicts are immutable once built (the sandbox forbids
// mutating them), so values share them through reference counting and a copy
// is cheap. Namespaces are the one mutable object (`{% set ns.x = ... %}`).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/json.h"
#include "util/recursion_budget.h"

namespace vllm::chat::jinja {

class Value;
class Object;
using List = std::vector<Value>;

// A dict with string keys, in insertion order (Python 3 dicts).
struct Dict {
    std::vector<std::pair<std::string, Value>> entries;
    const Value* find(std::string_view key) const;
    void set(std::string key, Value v);  // replaces in place or appends
};

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Object };

class Value {
public:
    Value() : kind_(Kind::Undefined) {}
    static Value undefined(std::string hint);  // hint: jinja2's UndefinedError text
    static Value none() { return Value(Kind::None); }
    Value(bool b) : kind_(Kind::Bool), data_(b) {}
    Value(int i) : kind_(Kind::Int), data_(int64_t{i}) {}
    Value(int64_t i) : kind_(Kind::Int), data_(i) {}
    Value(double d) : kind_(Kind::Float), data_(d) {}
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    Value(List items, bool tuple = false);
    Value(Dict dict);
    Value(std::shared_ptr<Object> object);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }  // any sequence of values
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_object() const { return kind_ == Kind::Object; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;  // int or bool (Python's bool is an int)
    double as_double() const;  // int, bool or float
    const std::string& as_string() const;
    const List& as_list() const;
    const Dict& as_dict() const;
    Object& as_object() const;
    const std::shared_ptr<Object>& object_ptr() const;
    const std::string& undefined_hint() const;

    // Python's type name, as its error messages print it ("str", "dict", "NoneType").
    const char* type_name() const;

    // Lists and dicts inside one another at most this deep (a render error
    // past it): a loop can nest a value a level per iteration, and printing,
    // comparing or serializing one recurses per level (each level holding a
    // ValueWalkStep, which also keeps the thread's stack).
    static constexpr int kMaxDepth = 1000;
    static constexpr RecursionLimit kNesting{"a list or dict", kMaxDepth};

private:
    explicit Value(Kind kind) : kind_(kind) {}
    void set_depth(int below);
    using StringPtr = std::shared_ptr<const std::string>;
    using ListPtr = std::shared_ptr<const List>;
    using DictPtr = std::shared_ptr<const Dict>;
    using ObjectPtr = std::shared_ptr<Object>;
    Kind kind_;
    int depth_ = 0;  // 1 + the deepest list or dict inside (0: not a list or dict)
    std::variant<std::monostate, bool, int64_t, double, StringPtr, ListPtr, DictPtr, ObjectPtr> data_;
};

struct Interpreter;

// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
};

// Opaque objects: namespace, loop, cycler, macros, builtin functions, bound methods.
class Object {
public:
    virtual ~Object() = default;
    virtual const char* type_name() const = 0;
    // Attribute lookup; an Undefined (with jinja2's hint) when absent.
    virtual Value get_attr(std::string_view name) const;
    // Only namespaces take attribute assignment.
    virtual bool set_attr(const std::string& name, Value v);
    virtual bool is_callable() const { return false; }
    virtual Value call(Interpreter& interp, CallArgs& args);
    // str(): what `{{ obj }}` prints.
    virtual std::string str() const;
};

// Python truthiness; Undefined is false.
bool truthy(const Value& v);

// One level of a recursive walk into a list or dict (comparing, printing,
// converting); a render error naming Value::kNesting past its limit.
class ValueWalkStep {
public:
    ValueWalkStep();

private:
    static thread_local int depth_;
    RecursionGuard guard_;
};

// Python ==, with jinja2's Undefined == Undefined.
bool equals(const Value& a, const Value& b);
// str(v) as `{{ v }}` prints it: None, True, 1.5, [1, 'a'], {'k': 'v'}; Undefined prints "".
std::string to_str(const Value& v);
void append_str(std::string& out, const Value& v);
// repr(v): strings quoted as Python quotes them.
std::string to_repr(const Value& v);

Value from_json(const json::Value& v);
// For tojson; an Undefined or object raises TypeError's text ("Object of type Undefined is not JSON serializable").
json::Value to_json(const Value& v);

}  // namespace vllm::chat::jinja
