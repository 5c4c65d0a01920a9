#include "chat/jinja/value_tests.h"

#include "chat/jinja/call_args.h"
#include "chat/jinja/error.h"
#include "chat/jinja/filters.h"
#include "chat/jinja/operators.h"

namespace vllm::chat::jinja {

namespace {

// The single argument of a comparison test (`x is equalto y`).
const Value& operand(const char* test, CallArgs& args) {
    if (args.positional.size() != 1 || !args.keywords.empty())
        throw_render_error(std::string("test '") + test + "' takes exactly one argument");
    return args.positional[0];
}

void no_args(const char* test, const CallArgs& args) {
    if (!args.positional.empty() || !args.keywords.empty())
        throw_render_error(std::string("test '") + test + "' takes no arguments");
}

bool t_defined(Interpreter&, const Value& v, CallArgs& a) { no_args("defined", a); return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs& a) { no_args("undefined", a); return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs& a) { no_args("none", a); return v.is_none(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs& a) { no_args("boolean", a); return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs& a) { no_args("true", a); return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs& a) { no_args("false", a); return v.is_bool() && !v.as_bool(); }
bool t_integer(Interpreter&, const Value& v, CallArgs& a) { no_args("integer", a); return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs& a) { no_args("float", a); return v.is_float(); }
bool t_number(Interpreter&, const Value& v, CallArgs& a) { no_args("number", a); return v.is_number(); }
bool t_string(Interpreter&, const Value& v, CallArgs& a) { no_args("string", a); return v.is_string(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs& a) { no_args("mapping", a); return v.is_dict(); }

// Python's iter() succeeds on str, list, tuple, dict and jinja2's Undefined.
bool t_iterable(Interpreter&, const Value& v, CallArgs& a) {
    no_args("iterable", a);
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs& a) {
    no_args("sequence", a);
    return v.is_string() || v.is_list() || v.is_dict();
}
bool t_callable(Interpreter&, const Value& v, CallArgs& a) {
    no_args("callable", a);
    return v.is_object() && v.as_object().is_callable();
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return equals(v, operand("equalto", a)); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !equals(v, operand("ne", a)); }
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return compare(CompareOp::Lt, v, operand("lt", a)); }
bool t_le(Interpreter&, const Value& v, CallArgs& a) { return compare(CompareOp::Le, v, operand("le", a)); }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return compare(CompareOp::Gt, v, operand("gt", a)); }
bool t_ge(Interpreter&, const Value& v, CallArgs& a) { return compare(CompareOp::Ge, v, operand("ge", a)); }
bool t_in(Interpreter&, const Value& v, CallArgs& a) { return contains(operand("in", a), v); }

// Python's `is`: None/True/False are singletons; containers compare by identity.
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
    const Value& other = operand("sameas", a);
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::None:
        case Kind::Undefined: return true;
        case Kind::Bool: return v.as_bool() == other.as_bool();
        case Kind::Object: return v.object_ptr() == other.object_ptr();
        case Kind::String: return &v.as_string() == &other.as_string();
        case Kind::List:
        case Kind::Tuple: return &v.as_list() == &other.as_list();
        case Kind::Dict: return &v.as_dict() == &other.as_dict();
        default: return equals(v, other);
    }
}

int64_t integer_operand(const char* test, const Value& v) {
    if (v.is_undefined()) raise_undefined(v);
    if (!v.is_int() && !v.is_bool()) throw_render_error(std::string("test '") + test + "' needs an integer");
    return v.as_int();
}

bool t_odd(Interpreter&, const Value& v, CallArgs& a) {
    no_args("odd", a);
    return integer_operand("odd", v) % 2 != 0;
}
bool t_even(Interpreter&, const Value& v, CallArgs& a) {
    no_args("even", a);
    return integer_operand("even", v) % 2 == 0;
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
    const Value& divisor = operand("divisibleby", a);
    return equals(binary(BinaryOp::Mod, v, divisor), Value(int64_t{0}));
}

bool t_lower(Interpreter&, const Value& v, CallArgs& a) {
    no_args("lower", a);
    std::string s = to_str(v);
    bool cased = false;
    for (char c : s) {
        if (c >= 'A' && c <= 'Z') return false;
        cased = cased || (c >= 'a' && c <= 'z');
    }
    return cased;
}
bool t_upper(Interpreter&, const Value& v, CallArgs& a) {
    no_args("upper", a);
    std::string s = to_str(v);
    bool cased = false;
    for (char c : s) {
        if (c >= 'a' && c <= 'z') return false;
        cased = cased || (c >= 'A' && c <= 'Z');
    }
    return cased;
}

bool t_filter(Interpreter&, const Value& v, CallArgs& a) {
    no_args("filter", a);
    return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& a) {
    no_args("test", a);
    return v.is_string() && find_test(v.as_string()) != nullptr;
}
bool t_escaped(Interpreter&, const Value&, CallArgs& a) {
    no_args("escaped", a);
    return false;  // nothing is Markup: autoescape is off
}

struct TestEntry {
    const char* name;
    TestFn fn;
};

const TestEntry kTests[] = {
    {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
    {"true", t_true}, {"false", t_false}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
    {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_sequence},
    {"callable", t_callable}, {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne},
    {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le}, {"gt", t_gt},
    {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"in", t_in}, {"sameas", t_sameas},
    {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
    {"filter", t_filter}, {"test", t_test}, {"escaped", t_escaped},
};

}  // namespace

TestFn find_test(std::string_view name) {
    for (const TestEntry& entry : kTests)
        if (name == entry.name) return entry.fn;
    return nullptr;
}

}  // namespace vllm::chat::jinja
