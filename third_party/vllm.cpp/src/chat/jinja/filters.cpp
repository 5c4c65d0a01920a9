#include "chat/jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "chat/jinja/call_args.h"
#include "chat/jinja/error.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_str.h"
#include "chat/jinja/value_tests.h"
#include "util/utf8.h"

namespace vllm::chat::jinja {

namespace {

// jinja2's make_attrgetter: "a.b.0" looks up each part with item access
// (integers as indices); an Undefined part is replaced by `fallback` when given.
Value lookup_path(const Value& item, const std::string& path, const Value* fallback = nullptr) {
    Value v = item;
    size_t start = 0;
    for (;;) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        v = get_item(v, numeric ? Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))) : Value(part));
        if (fallback != nullptr && v.is_undefined()) v = *fallback;
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

Value string_filter_input(const Value& v) { return v.is_string() ? v : Value(to_str(v)); }

// ---------------------------------------------------------------- strings

Value f_trim(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("trim", args, {"chars"});
    std::optional<std::string> chars;
    if (b.has(0) && !b.get(0).is_none()) chars = b.get_string(0, "");
    return Value(py::strip(to_str(input), chars, true, true));
}

Value f_upper(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("upper", args, {});
    return Value(py::upper(to_str(input)));
}

Value f_lower(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("lower", args, {});
    return Value(py::lower(to_str(input)));
}

Value f_capitalize(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("capitalize", args, {});
    return Value(py::capitalize(to_str(input)));
}

// jinja2's title: words start after runs of "-", whitespace, "(", "{", "[", "<".
Value f_title(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("title", args, {});
    std::string s = to_str(input);
    std::string out;
    bool at_word_start = true;
    size_t i = 0;
    while (i < s.size()) {
        size_t start = i;
        uint32_t cp = utf8::decode(s, i);
        std::string_view ch(s.data() + start, i - start);
        bool separator = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py::is_space(cp);
        if (separator) {
            out += ch;
            at_word_start = true;
        } else {
            out += at_word_start ? py::upper(ch) : py::lower(ch);
            at_word_start = false;
        }
    }
    return Value(std::move(out));
}

Value f_replace(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("replace", args, {"old", "new", "count"});
    int64_t count = b.has(2) && !b.get(2).is_none() ? b.get_int(2, -1) : -1;
    return Value(py::replace(to_str(input), to_str(b.get(0)), to_str(b.get(1)), count));
}

Value f_indent(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("indent", args, {"width", "first", "blank"});
    std::string indentation = b.has(0) && b.get(0).is_string() ? b.get(0).as_string()
                                                                : std::string(static_cast<size_t>(std::max<int64_t>(0, b.get_int(0, 4))), ' ');
    bool first = b.get_bool(1, false), blank = b.get_bool(2, false);
    std::vector<std::string> lines = py::splitlines(to_str(input) + "\n", false);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        bool indent_line = i == 0 ? first : (blank || !lines[i].empty());
        if (indent_line) out += indentation;
        out += lines[i];
    }
    return Value(std::move(out));
}

Value f_center(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("center", args, {"width"});
    std::string s = to_str(input);
    int64_t width = std::min<int64_t>(b.get_int(0, 80), 1 << 20);
    int64_t len = static_cast<int64_t>(py::length(s));
    if (len >= width) return Value(s);
    int64_t margin = width - len;
    int64_t left = margin / 2 + (margin & width & 1);  // CPython's rounding of the split
    return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(margin - left), ' '));
}

Value f_wordcount(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("wordcount", args, {});
    std::string s = to_str(input);
    int64_t words = 0;
    bool in_word = false;
    size_t i = 0;
    while (i < s.size()) {
        uint32_t cp = utf8::decode(s, i);
        bool word_char = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
                         cp == '_' || (cp >= 0x80 && !py::is_space(cp));
        if (word_char && !in_word) ++words;
        in_word = word_char;
    }
    return Value(words);
}

Value f_string(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("string", args, {});
    return string_filter_input(input);
}

Value f_safe(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("safe", args, {});
    return input;
}

Value f_escape(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("escape", args, {});
    std::string out;
    for (char c : to_str(input)) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return Value(std::move(out));
}

Value f_format(Interpreter&, const Value& input, CallArgs& args) {
    if (!args.keywords.empty() && !args.positional.empty())
        throw_render_error("can't handle positional and keyword arguments at the same time");
    if (!args.keywords.empty()) {
        Dict d;
        for (auto& keyword : args.keywords) d.set(keyword.first, std::move(keyword.second));
        return Value(percent_format(to_str(input), Value(std::move(d))));
    }
    return Value(percent_format(to_str(input), Value(std::move(args.positional), true)));
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys) with no HTML escaping.
json::Value sorted_keys(json::Value v) {
    if (!v.is_array() && !v.is_object()) return v;
    const ValueWalkStep step;
    if (v.is_array()) {
        for (json::Value& item : v.items()) item = sorted_keys(std::move(item));
    } else if (v.is_object()) {
        auto& members = v.members();
        for (auto& member : members) member.second = sorted_keys(std::move(member.second));
        std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    return v;
}

Value f_tojson(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    if (b.has(2) && !b.get(2).is_none()) throw_render_error("tojson(separators=...) is not supported by this engine");
    json::DumpOptions options;
    options.python_separators = true;
    options.ensure_ascii = b.get_bool(0, false);
    if (b.has(1) && !b.get(1).is_none()) {
        options.indent = static_cast<int>(std::clamp<int64_t>(b.get_int(1, 0), 0, 64));
    }
    json::Value j = to_json(input);
    if (b.get_bool(3, false)) j = sorted_keys(std::move(j));
    return Value(json::dump(j, options));
}

// ---------------------------------------------------------------- numbers

Value f_int(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("int", args, {"default", "base"});
    Value fallback = b.get_or(0, Value(int64_t{0}));
    if (input.is_int() || input.is_bool()) return Value(input.as_int());
    if (input.is_float()) {
        double d = input.as_double();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
        return Value(static_cast<int64_t>(d));
    }
    if (!input.is_string()) return fallback;
    std::string s = py::strip(input.as_string(), std::nullopt, true, true);
    std::string digits;
    for (char c : s)
        if (c != '_') digits += c;
    int base = static_cast<int>(b.get_int(1, 10));
    if (!digits.empty()) {
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(digits.c_str(), &end, base);
        if (end == digits.c_str() + digits.size() && errno == 0) return Value(static_cast<int64_t>(v));
        end = nullptr;
        double d = std::strtod(digits.c_str(), &end);
        if (end == digits.c_str() + digits.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value(static_cast<int64_t>(d));
    }
    return fallback;
}

Value f_float(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("float", args, {"default"});
    Value fallback = b.get_or(0, Value(0.0));
    if (input.is_number()) return Value(input.as_double());
    if (!input.is_string()) return fallback;
    std::string s = py::strip(input.as_string(), std::nullopt, true, true);
    if (s.empty()) return fallback;
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return fallback;
    return Value(d);
}

Value f_abs(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("abs", args, {});
    if (input.is_float()) return Value(std::fabs(input.as_double()));
    if (input.is_int() || input.is_bool()) {
        if (input.as_int() == INT64_MIN) throw_render_error("integer overflow (the engine's integers are 64-bit)");
        return Value(input.as_int() < 0 ? -input.as_int() : input.as_int());
    }
    if (input.is_undefined()) raise_undefined(input);
    throw_render_error(std::string("bad operand type for abs(): '") + input.type_name() + "'");
}

Value f_round(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("round", args, {"precision", "method"});
    int64_t precision = std::clamp<int64_t>(b.get_int(0, 0), -300, 300);
    std::string method = b.get_string(1, "common");
    if (method != "common" && method != "ceil" && method != "floor")
        throw_render_error("method must be common, ceil or floor");
    if (input.is_undefined()) raise_undefined(input);
    if (!input.is_number()) throw_render_error(std::string("type ") + input.type_name() + " doesn't define __round__ method");
    if (method == "common" && !input.is_float()) return Value(input.as_int());
    double x = input.as_double();
    if (method != "common") {
        double scale = std::pow(10.0, static_cast<double>(precision));
        return Value((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
    }
    if (!std::isfinite(x)) return Value(x);
    if (precision <= 0) {
        double scale = std::pow(10.0, static_cast<double>(-precision));
        return Value(std::nearbyint(x / scale) * scale);  // half to even, as Python's round
    }
    // The exact binary value rounded half-to-even in decimal: what Python's round() does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
    return Value(std::strtod(buf, nullptr));
}

// ---------------------------------------------------------------- sequences

Value f_length(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("length", args, {});
    return Value(static_cast<int64_t>(length(input)));
}

Value f_list(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("list", args, {});
    return Value(iterate(input));
}

Value f_first(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("first", args, {});
    List items = iterate(input);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("last", args, {});
    List items = iterate(input);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_join(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("join", args, {"d", "attribute"});
    std::string separator = b.has(0) ? to_str(b.get(0)) : "";
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input)) {
        if (!first) out += separator;
        first = false;
        append_str(out, b.has(1) && !b.get(1).is_none() ? lookup_path(item, to_str(b.get(1))) : item);
        if (out.size() > kMaxResultBytes) throw_render_error("join result exceeds the template engine's limit");
    }
    return Value(std::move(out));
}

Value f_default(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("default", args, {"default_value", "boolean"});
    bool use_default = input.is_undefined() || (b.get_bool(1, false) && !truthy(input));
    return use_default ? b.get_or(0, Value(std::string())) : input;
}

Value f_items(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("items", args, {});
    if (input.is_undefined()) return Value(List{});
    if (!input.is_dict()) throw_render_error("Can only get item pairs from a mapping.");
    List out;
    for (const auto& entry : input.as_dict().entries) out.emplace_back(List{Value(entry.first), entry.second}, true);
    return Value(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("dictsort", args, {"case_sensitive", "by", "reverse"});
    if (!input.is_dict()) throw_render_error("dictsort() requires a mapping");
    bool case_sensitive = b.get_bool(0, false), reverse = b.get_bool(2, false);
    std::string by = b.get_string(1, "key");
    if (by != "key" && by != "value") throw_render_error("You can only sort by either \"key\" or \"value\"");
    std::vector<std::pair<std::string, Value>> entries = input.as_dict().entries;
    auto key_of = [&](const std::pair<std::string, Value>& e) {
        Value k = by == "key" ? Value(e.first) : e.second;
        return k.is_string() && !case_sensitive ? Value(py::lower(k.as_string())) : k;
    };
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
        return reverse ? less_than(key_of(y), key_of(x)) : less_than(key_of(x), key_of(y));
    });
    List out;
    for (auto& e : entries) out.emplace_back(List{Value(e.first), e.second}, true);
    return Value(std::move(out));
}

Value f_reverse(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs("reverse", args, {});
    if (input.is_string()) {
        std::vector<std::string> chars = py::characters(input.as_string());
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value(std::move(out));
    }
    List items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
}

// Sort / unique / min / max compare strings case-insensitively unless asked not to.
Value sort_key(const Value& item, const BoundArgs& b, size_t case_index, size_t attribute_index) {
    Value k = b.has(attribute_index) && !b.get(attribute_index).is_none() ? lookup_path(item, to_str(b.get(attribute_index)))
                                                                            : item;
    if (k.is_string() && !b.get_bool(case_index, false)) return Value(py::lower(k.as_string()));
    return k;
}

Value f_sort(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("sort", args, {"reverse", "case_sensitive", "attribute"});
    List items = iterate(input);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) keyed.emplace_back(sort_key(item, b, 1, 2), std::move(item));
    bool reverse = b.get_bool(0, false);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
        return reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
    });
    List out;
    for (auto& k : keyed) out.push_back(std::move(k.second));
    return Value(std::move(out));
}

Value f_unique(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("unique", args, {"case_sensitive", "attribute"});
    List out, seen;
    for (const Value& item : iterate(input)) {
        Value key = sort_key(item, b, 0, 1);
        bool duplicate = false;
        for (const Value& s : seen) duplicate = duplicate || equals(s, key);
        if (duplicate) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value(std::move(out));
}

Value min_max(const Value& input, CallArgs& args, bool want_max) {
    BoundArgs b(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
    List items = iterate(input);
    if (items.empty())
        return Value::undefined(want_max ? "No largest item, sequence was empty." : "No smallest item, sequence was empty.");
    size_t best = 0;
    Value best_key = sort_key(items[0], b, 0, 1);
    for (size_t i = 1; i < items.size(); ++i) {
        Value key = sort_key(items[i], b, 0, 1);
        if (want_max ? less_than(best_key, key) : less_than(key, best_key)) {
            best = i;
            best_key = std::move(key);
        }
    }
    return items[best];
}
Value f_min(Interpreter&, const Value& input, CallArgs& args) { return min_max(input, args, false); }
Value f_max(Interpreter&, const Value& input, CallArgs& args) { return min_max(input, args, true); }

Value f_sum(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("sum", args, {"attribute", "start"});
    Value total = b.get_or(1, Value(int64_t{0}));
    for (const Value& item : iterate(input))
        total = binary(BinaryOp::Add, total, b.has(0) && !b.get(0).is_none() ? lookup_path(item, to_str(b.get(0))) : item);
    return total;
}

Value f_batch(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("batch", args, {"linecount", "fill_with"});
    int64_t size = b.get_int(0, 0);
    if (size <= 0) throw_render_error("batch(): linecount must be positive");
    List out, current;
    for (const Value& item : iterate(input)) {
        current.push_back(item);
        if (static_cast<int64_t>(current.size()) == size) {
            out.emplace_back(std::move(current));
            current.clear();
        }
    }
    if (!current.empty()) {
        if (b.has(1) && !b.get(1).is_none())
            while (static_cast<int64_t>(current.size()) < size) current.push_back(b.get(1));
        out.emplace_back(std::move(current));
    }
    return Value(std::move(out));
}

Value f_attr(Interpreter&, const Value& input, CallArgs& args) {
    BoundArgs b("attr", args, {"name"});
    std::string name = b.get_string(0, "");
    if (input.is_dict()) {  // attribute access only: a dict's keys are not attributes
        Value method = get_attr(Value(Dict{}), name);
        if (!method.is_undefined()) return get_attr(input, name);
        return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    return get_attr(input, name);
}

// ---------------------------------------------------------------- map / select

// The test named by args.positional[first] applied with the remaining
// arguments; with no name, truthiness.
bool run_test(Interpreter& interp, const Value& v, const CallArgs& args, size_t first) {
    if (args.positional.size() <= first) return truthy(v);
    const Value& name = args.positional[first];
    if (!name.is_string()) throw_render_error("test name must be a string");
    TestFn test = find_test(name.as_string());
    if (test == nullptr) throw_render_error("No test named '" + name.as_string() + "'.");
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first) + 1, args.positional.end());
    rest.keywords = args.keywords;
    return test(interp, v, rest);
}

Value select_impl(Interpreter& interp, const Value& input, CallArgs& args, bool keep_if, bool by_attribute) {
    std::string attribute;
    if (by_attribute) {
        if (args.positional.empty() || !args.positional[0].is_string())
            throw_render_error("selectattr/rejectattr need an attribute name");
        attribute = args.positional[0].as_string();
    }
    List out;
    for (const Value& item : iterate(input)) {
        Value subject = by_attribute ? lookup_path(item, attribute) : item;
        if (run_test(interp, subject, args, by_attribute ? 1 : 0) == keep_if) out.push_back(item);
    }
    return Value(std::move(out));
}
Value f_select(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, false); }
Value f_reject(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, false); }
Value f_selectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, true); }
Value f_rejectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, true); }

Value f_map(Interpreter& interp, const Value& input, CallArgs& args) {
    List out;
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& keyword : args.keywords) {
        if (keyword.first == "attribute") attribute = &keyword.second;
        else if (keyword.first == "default") fallback = &keyword.second;
        else if (args.positional.empty()) throw_render_error("map() got an unexpected keyword argument '" + keyword.first + "'");
    }
    if (attribute != nullptr) {
        for (const Value& item : iterate(input)) {
            out.push_back(lookup_path(item, to_str(*attribute), fallback));
        }
        return Value(std::move(out));
    }
    if (args.positional.empty() || !args.positional[0].is_string()) throw_render_error("map() requires a filter name or attribute=");
    FilterFn filter = find_filter(args.positional[0].as_string());
    if (filter == nullptr) throw_render_error("No filter named '" + args.positional[0].as_string() + "'.");
    for (const Value& item : iterate(input)) {
        CallArgs rest;
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        rest.keywords = args.keywords;
        out.push_back(filter(interp, item, rest));
    }
    return Value(std::move(out));
}

struct FilterEntry {
    const char* name;
    FilterFn fn;
};

const FilterEntry kFilters[] = {
    {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize}, {"center", f_center},
    {"count", f_length}, {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"e", f_escape},
    {"escape", f_escape}, {"first", f_first}, {"float", f_float}, {"forceescape", f_escape}, {"format", f_format},
    {"indent", f_indent}, {"int", f_int}, {"items", f_items}, {"join", f_join}, {"last", f_last},
    {"length", f_length}, {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"max", f_max}, {"min", f_min},
    {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
    {"round", f_round}, {"safe", f_safe}, {"select", f_select}, {"selectattr", f_selectattr}, {"sort", f_sort},
    {"string", f_string}, {"sum", f_sum}, {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim},
    {"unique", f_unique}, {"upper", f_upper}, {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
    for (const FilterEntry& entry : kFilters)
        if (name == entry.name) return entry.fn;
    return nullptr;
}

}  // namespace vllm::chat::jinja
