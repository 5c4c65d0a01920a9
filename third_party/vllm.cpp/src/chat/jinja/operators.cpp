#include "chat/jinja/operators.h"

#include <cmath>
#include <cstdio>

#include "chat/jinja/error.h"
#include "chat/jinja/methods.h"
#include "chat/jinja/py_str.h"
#include "util/utf8.h"

namespace vllm::chat::jinja {

void raise_undefined(const Value& undefined) { throw_render_error(undefined.undefined_hint()); }

namespace {

// jinja2's object_type_repr: "dict object", "None", "str object".
std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    if (v.is_object()) return std::string(v.type_name()) + " object";
    return std::string(v.type_name()) + " object";
}

[[noreturn]] void unsupported_operand(const char* op, const Value& a, const Value& b) {
    throw_render_error(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                       b.type_name() + "'");
}

void check_size(size_t bytes) {
    if (bytes > kMaxResultBytes)
        throw_render_error("result of " + std::to_string(bytes) + " bytes exceeds the template engine's limit");
}

Value int_result(int64_t a, int64_t b, BinaryOp op) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
        case BinaryOp::Add: overflow = __builtin_add_overflow(a, b, &r); break;
        case BinaryOp::Sub: overflow = __builtin_sub_overflow(a, b, &r); break;
        case BinaryOp::Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
        default: break;
    }
    if (overflow) throw_render_error("integer overflow (the engine's integers are 64-bit)");
    return Value(r);
}

Value repeat(const Value& seq, int64_t times) {
    if (times <= 0) return seq.is_string() ? Value(std::string()) : Value(List{}, seq.kind() == Kind::Tuple);
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        check_size(s.size() * static_cast<size_t>(times));
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(times));
        for (int64_t i = 0; i < times; ++i) out += s;
        return Value(std::move(out));
    }
    const List& items = seq.as_list();
    check_size(items.size() * static_cast<size_t>(times) * sizeof(Value));
    List out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value(std::move(out), seq.kind() == Kind::Tuple);
}

Value power(const Value& a, const Value& b) {
    if (!a.is_float() && !b.is_float()) {
        int64_t base = a.as_int(), exp = b.as_int();
        if (exp < 0) {
            if (base == 0) throw_render_error("0.0 cannot be raised to a negative power");
            return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
        }
        int64_t result = 1;
        for (int64_t i = 0; i < exp; ++i) {
            if (__builtin_mul_overflow(result, base, &result))
                throw_render_error("integer overflow (the engine's integers are 64-bit)");
            if (result == 0 || result == 1) break;
        }
        return Value(result);
    }
    double x = a.as_double(), y = b.as_double();
    if (x == 0.0 && y < 0) throw_render_error("0.0 cannot be raised to a negative power");
    return Value(std::pow(x, y));
}

Value numeric(BinaryOp op, const Value& a, const Value& b) {
    bool floats = a.is_float() || b.is_float();
    switch (op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Mul:
            if (!floats) return int_result(a.as_int(), b.as_int(), op);
            if (op == BinaryOp::Add) return Value(a.as_double() + b.as_double());
            if (op == BinaryOp::Sub) return Value(a.as_double() - b.as_double());
            return Value(a.as_double() * b.as_double());
        case BinaryOp::Div:
            if (b.as_double() == 0.0) throw_render_error(floats ? "float division by zero" : "division by zero");
            return Value(a.as_double() / b.as_double());
        case BinaryOp::FloorDiv:
        case BinaryOp::Mod: {
            if (!floats) {
                int64_t x = a.as_int(), y = b.as_int();
                if (y == 0)
                    throw_render_error(op == BinaryOp::Mod ? "integer modulo by zero"
                                                           : "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) {
                    if (op == BinaryOp::Mod) return Value(int64_t{0});
                    throw_render_error("integer overflow (the engine's integers are 64-bit)");
                }
                int64_t q = x / y, r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) {
                    q -= 1;
                    r += y;
                }
                return Value(op == BinaryOp::Mod ? r : q);
            }
            double x = a.as_double(), y = b.as_double();
            if (y == 0.0) throw_render_error(op == BinaryOp::Mod ? "float modulo" : "float floor division by zero");
            double r = std::fmod(x, y);
            if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
            if (r == 0.0) r = std::copysign(0.0, y);
            if (op == BinaryOp::Mod) return Value(r);
            return Value(std::floor((x - r) / y + 0.0));
        }
        case BinaryOp::Pow: return power(a, b);
        default: break;
    }
    return Value();
}

const char* op_symbol(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add: return "+";
        case BinaryOp::Sub: return "-";
        case BinaryOp::Mul: return "*";
        case BinaryOp::Div: return "/";
        case BinaryOp::FloorDiv: return "//";
        case BinaryOp::Mod: return "%";
        case BinaryOp::Pow: return "** or pow()";
        case BinaryOp::Concat: return "~";
    }
    return "?";
}

}  // namespace

Value binary(BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::Concat) {
        std::string out = to_str(a);
        append_str(out, b);
        return Value(std::move(out));
    }
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) return numeric(op, a, b);
    switch (op) {
        case BinaryOp::Add:
            if (a.is_string()) {
                if (!b.is_string())
                    throw_render_error(std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
                check_size(a.as_string().size() + b.as_string().size());
                return Value(a.as_string() + b.as_string());
            }
            if (a.is_list()) {
                if (b.kind() != a.kind())
                    throw_render_error(std::string("can only concatenate ") + a.type_name() + " (not \"" +
                                       b.type_name() + "\") to " + a.type_name());
                List out = a.as_list();
                out.insert(out.end(), b.as_list().begin(), b.as_list().end());
                return Value(std::move(out), a.kind() == Kind::Tuple);
            }
            break;
        case BinaryOp::Mul:
            if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
            if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
            if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
                const Value& other = a.is_string() || a.is_list() ? b : a;
                throw_render_error(std::string("can't multiply sequence by non-int of type '") + other.type_name() +
                                   "'");
            }
            break;
        case BinaryOp::Mod:
            if (a.is_string()) return Value(percent_format(a.as_string(), b));
            break;
        default: break;
    }
    unsupported_operand(op_symbol(op), a, b);
}

Value negate(const Value& v, bool minus) {
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_float()) return Value(minus ? -v.as_double() : v.as_double());
    if (v.is_int() || v.is_bool()) {
        if (!minus) return Value(v.as_int());
        if (v.as_int() == INT64_MIN) throw_render_error("integer overflow (the engine's integers are 64-bit)");
        return Value(-v.as_int());
    }
    throw_render_error(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + v.type_name() + "'");
}

bool less_than(const Value& a, const Value& b) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = code point order
    if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
        const ValueWalkStep step;
        const List& x = a.as_list();
        const List& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals(x[i], y[i])) continue;
            return less_than(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    throw_render_error(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                       b.type_name() + "'");
}

bool compare(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
        case CompareOp::Eq: return equals(a, b);
        case CompareOp::Ne: return !equals(a, b);
        case CompareOp::Lt: return less_than(a, b);
        case CompareOp::Gt: return less_than(b, a);
        case CompareOp::Le: return equals(a, b) ? (less_than(b, a), true) : less_than(a, b);
        case CompareOp::Ge: return equals(a, b) ? (less_than(a, b), true) : less_than(b, a);
        case CompareOp::In: return contains(b, a);
        case CompareOp::NotIn: return !contains(b, a);
    }
    return false;
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (!item.is_string())
                throw_render_error(std::string("'in <string>' requires string as left operand, not ") +
                                   item.type_name());
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Kind::List:
        case Kind::Tuple:
            for (const Value& v : container.as_list())
                if (equals(v, item)) return true;
            return false;
        case Kind::Dict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
        default:
            throw_render_error(std::string("argument of type '") + container.type_name() + "' is not iterable");
    }
}

Value get_attr(const Value& obj, std::string_view name) {
    switch (obj.kind()) {
        case Kind::Undefined: raise_undefined(obj);
        case Kind::Object: return obj.as_object().get_attr(name);
        case Kind::Dict: {
            // Python attributes (methods) come before keys, as jinja2's getattr tries them first.
            Value method = find_method(obj, name);
            if (!method.is_undefined() || method.undefined_hint().find("unsafe") != std::string::npos) return method;
            if (const Value* v = obj.as_dict().find(name)) return *v;
            break;
        }
        case Kind::String:
        case Kind::List:
        case Kind::Tuple: {
            Value method = find_method(obj, name);
            if (!method.is_undefined() || method.undefined_hint().find("unsafe") != std::string::npos) return method;
            break;
        }
        default: break;
    }
    return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + std::string(name) + "'");
}

namespace {

// Python's index normalisation; false when out of range.
bool normalize_index(int64_t& i, size_t size) {
    if (i < 0) i += static_cast<int64_t>(size);
    return i >= 0 && i < static_cast<int64_t>(size);
}

}  // namespace

Value get_item(const Value& obj, const Value& key) {
    switch (obj.kind()) {
        case Kind::Undefined: raise_undefined(obj);
        case Kind::Dict:
            if (key.is_string()) {
                if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
            }
            break;
        case Kind::List:
        case Kind::Tuple:
            if (key.is_int() || key.is_bool()) {
                int64_t i = key.as_int();
                if (normalize_index(i, obj.as_list().size())) return obj.as_list()[static_cast<size_t>(i)];
            }
            break;
        case Kind::String:
            if (key.is_int() || key.is_bool()) {
                const std::string& s = obj.as_string();
                int64_t i = key.as_int();
                if (py::is_ascii(s)) {
                    if (normalize_index(i, s.size())) return Value(std::string(1, s[static_cast<size_t>(i)]));
                } else {
                    std::vector<size_t> offsets = py::codepoint_offsets(s);
                    if (normalize_index(i, offsets.size() - 1)) {
                        size_t at = static_cast<size_t>(i);
                        return Value(s.substr(offsets[at], offsets[at + 1] - offsets[at]));
                    }
                }
            }
            break;
        default: break;
    }
    if (key.is_string()) {
        Value attr = get_attr(obj, key.as_string());
        if (!attr.is_undefined()) return attr;
        return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + key.as_string() + "'");
    }
    return Value::undefined("'" + object_type_repr(obj) + "' has no element " + to_repr(key));
}

namespace {

// Python's slice.indices(): clamps start/stop for the step's direction.
void slice_bounds(const Value& start_v, const Value& stop_v, const Value& step_v, size_t size, int64_t& start,
                  int64_t& stop, int64_t& step) {
    auto as_index = [](const Value& v, const char* what) -> int64_t {
        if (!v.is_int() && !v.is_bool())
            throw_render_error(std::string("slice ") + what + " must be an integer or None, not " + v.type_name());
        return v.as_int();
    };
    bool has_start = !start_v.is_none() && !start_v.is_undefined();
    bool has_stop = !stop_v.is_none() && !stop_v.is_undefined();
    bool has_step = !step_v.is_none() && !step_v.is_undefined();
    step = has_step ? as_index(step_v, "step") : 1;
    if (step == 0) throw_render_error("slice step cannot be zero");
    int64_t n = static_cast<int64_t>(size);
    auto clamp = [&](int64_t i, bool present, int64_t default_value) {
        if (!present) return default_value;
        if (i < 0) {
            i += n;
            if (i < 0) i = step < 0 ? -1 : 0;
        } else if (i >= n) {
            i = step < 0 ? n - 1 : n;
        }
        return i;
    };
    start = clamp(has_start ? as_index(start_v, "start") : 0, has_start, step < 0 ? n - 1 : 0);
    stop = clamp(has_stop ? as_index(stop_v, "stop") : 0, has_stop, step < 0 ? -1 : n);
}

}  // namespace

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (!obj.is_string() && !obj.is_list()) throw_render_error(std::string("'") + obj.type_name() + "' object is not subscriptable");
    bool ascii = obj.is_string() && py::is_ascii(obj.as_string());
    std::vector<size_t> offsets;
    size_t size;
    if (obj.is_list()) {
        size = obj.as_list().size();
    } else if (ascii) {
        size = obj.as_string().size();
    } else {
        offsets = py::codepoint_offsets(obj.as_string());
        size = offsets.size() - 1;
    }
    int64_t start, stop, step;
    slice_bounds(start_v, stop_v, step_v, size, start, stop, step);
    if (obj.is_list()) {
        List out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(obj.as_list()[static_cast<size_t>(i)]);
        return Value(std::move(out), obj.kind() == Kind::Tuple);
    }
    const std::string& s = obj.as_string();
    if (step == 1) {
        if (stop <= start) return Value(std::string());
        if (ascii) return Value(s.substr(static_cast<size_t>(start), static_cast<size_t>(stop - start)));
        return Value(s.substr(offsets[static_cast<size_t>(start)], offsets[static_cast<size_t>(stop)] - offsets[static_cast<size_t>(start)]));
    }
    std::string out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        size_t at = static_cast<size_t>(i);
        if (ascii) {
            out += s[at];
        } else {
            out.append(s, offsets[at], offsets[at + 1] - offsets[at]);
        }
    }
    return Value(std::move(out));
}

List iterate(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return {};
        case Kind::List:
        case Kind::Tuple: return v.as_list();
        case Kind::Dict: {
            List keys;
            keys.reserve(v.as_dict().entries.size());
            for (const auto& entry : v.as_dict().entries) keys.emplace_back(entry.first);
            return keys;
        }
        case Kind::String: {
            List chars;
            for (std::string& c : py::characters(v.as_string())) chars.emplace_back(std::move(c));
            return chars;
        }
        default: throw_render_error(std::string("'") + v.type_name() + "' object is not iterable");
    }
}

size_t length(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return 0;
        case Kind::String: return py::length(v.as_string());
        case Kind::List:
        case Kind::Tuple: return v.as_list().size();
        case Kind::Dict: return v.as_dict().entries.size();
        default: throw_render_error(std::string("object of type '") + v.type_name() + "' has no len()");
    }
}

// ---------------------------------------------------------------- printf-style %

namespace {

// A float under an integer conversion, truncated as Python does; Python's
// integers are unbounded, the engine's 64-bit (a cast past them is undefined).
int64_t float_as_int(char conversion, double d) {
    if (std::isnan(d)) throw_render_error("cannot convert float NaN to integer");
    if (std::isinf(d)) throw_render_error("cannot convert float infinity to integer");
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
        throw_render_error(std::string("%") + conversion + " format: " + to_str(Value(d)) +
                           " is outside the engine's 64-bit integers");
    return static_cast<int64_t>(d);
}

// %c: a one-character string, or an int taken as a code point (Python's
// messages; a surrogate, which Python would keep in a str, is refused).
std::string format_char(const Value& v) {
    if (v.is_string() && py::length(v.as_string()) == 1) return v.as_string();
    if (!v.is_int() && !v.is_bool()) throw_render_error("%c requires int or char");
    const int64_t code = v.as_int();
    if (code < 0 || code > 0x10FFFF) throw_render_error("%c arg not in range(0x110000)");
    if (code >= 0xD800 && code <= 0xDFFF) throw_render_error("%c arg is a surrogate, which UTF-8 cannot hold");
    std::string piece;
    utf8::append(piece, static_cast<uint32_t>(code));
    return piece;
}

std::string format_number(char conversion, const std::string& flags, int width, int precision, const Value& v) {
    if (!v.is_number())
        throw_render_error(std::string("%") + conversion + " format: a real number is required, not " + v.type_name());
    std::string spec = "%" + flags;
    if (width >= 0) spec += std::to_string(width);
    if (precision >= 0) spec += "." + std::to_string(precision);
    char buf[512];
    if (conversion == 'd' || conversion == 'i' || conversion == 'x' || conversion == 'X' || conversion == 'o') {
        int64_t i = v.is_float() ? float_as_int(conversion, v.as_double()) : v.as_int();
        spec += "ll";
        spec += conversion == 'i' ? 'd' : conversion;
        std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(i));
    } else {
        spec += conversion;
        std::snprintf(buf, sizeof buf, spec.c_str(), v.as_double());
    }
    return buf;
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
    List positional = args.kind() == Kind::Tuple ? args.as_list() : List{args};
    size_t next_arg = 0;
    std::string out;
    auto take = [&]() -> const Value& {
        if (next_arg >= positional.size()) throw_render_error("not enough arguments for format string");
        return positional[next_arg++];
    };
    bool used_mapping = false;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) throw_render_error("incomplete format");
        Value keyed;
        bool has_key = false;
        if (fmt[i] == '(') {
            size_t close = fmt.find(')', i);
            if (close == std::string::npos) throw_render_error("incomplete format key");
            if (!args.is_dict()) throw_render_error("format requires a mapping");
            const Value* v = args.as_dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
            if (v == nullptr) throw_render_error(py::repr(fmt.substr(i + 1, close - i - 1)));
            keyed = *v;
            has_key = used_mapping = true;
            i = close + 1;
        }
        std::string flags;
        while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
        int width = -1, precision = -1;
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') width = (width < 0 ? 0 : width * 10) + (fmt[i++] - '0');
        if (i < fmt.size() && fmt[i] == '.') {
            ++i;
            precision = 0;
            while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') precision = precision * 10 + (fmt[i++] - '0');
        }
        if (width > 256 || precision > 256) throw_render_error("format width or precision too large");
        if (i >= fmt.size()) throw_render_error("incomplete format");
        char conversion = fmt[i];
        if (conversion == '%') {
            out += '%';
            continue;
        }
        const Value& v = has_key ? keyed : take();
        std::string piece;
        switch (conversion) {
            case 's': piece = to_str(v); break;
            case 'r': piece = to_repr(v); break;
            case 'c': piece = format_char(v); break;
            case 'd': case 'i': case 'x': case 'X': case 'o': case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
                out += format_number(conversion, flags, width, precision, v);
                continue;
            default:
                throw_render_error(std::string("unsupported format character '") + conversion + "'");
        }
        if (precision >= 0 && conversion != 'c') piece = piece.substr(0, precision);
        size_t len = py::length(piece);
        if (width > 0 && len < static_cast<size_t>(width)) {
            std::string pad(static_cast<size_t>(width) - len, ' ');
            piece = flags.find('-') != std::string::npos ? piece + pad : pad + piece;
        }
        out += piece;
    }
    if (!used_mapping && next_arg < positional.size() && args.kind() == Kind::Tuple)
        throw_render_error("not all arguments converted during string formatting");
    return out;
}

}  // namespace vllm::chat::jinja
