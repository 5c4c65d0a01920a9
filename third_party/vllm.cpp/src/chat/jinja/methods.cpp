#include "chat/jinja/methods.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "chat/jinja/call_args.h"
#include "chat/jinja/error.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_str.h"
#include "util/utf8.h"

namespace vllm::chat::jinja {

namespace {

using MethodFn = Value (*)(const Value& self, CallArgs& args);

struct MethodEntry {
    const char* name;
    MethodFn fn;  // nullptr: an attribute Python has but this engine does not implement
};

class BoundMethod : public Object {
public:
    BoundMethod(Value self, const MethodEntry& entry) : self_(std::move(self)), entry_(entry) {}
    const char* type_name() const override { return "builtin_function_or_method"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
        if (entry_.fn == nullptr)
            throw_render_error(std::string(self_.type_name()) + "." + entry_.name + "() is not supported by this engine");
        return entry_.fn(self_, args);
    }
    std::string str() const override {
        return std::string("<built-in method ") + entry_.name + " of " + self_.type_name() + " object>";
    }

private:
    Value self_;
    const MethodEntry& entry_;
};

std::optional<std::string> optional_string(const BoundArgs& b, size_t i, const char* what) {
    if (!b.has(i) || b.get(i).is_none()) return std::nullopt;
    if (!b.get(i).is_string()) throw_render_error(std::string(what) + " arg must be None or str");
    return b.get(i).as_string();
}

Value string_list(std::vector<std::string> parts) {
    List out;
    out.reserve(parts.size());
    for (std::string& p : parts) out.emplace_back(std::move(p));
    return Value(std::move(out));
}

// ---------------------------------------------------------------- str

Value str_strip_impl(const Value& self, CallArgs& args, const char* name, bool left, bool right) {
    BoundArgs b(name, args, {"chars"});
    return Value(py::strip(self.as_string(), optional_string(b, 0, name), left, right));
}
Value str_strip(const Value& s, CallArgs& a) { return str_strip_impl(s, a, "strip", true, true); }
Value str_lstrip(const Value& s, CallArgs& a) { return str_strip_impl(s, a, "lstrip", true, false); }
Value str_rstrip(const Value& s, CallArgs& a) { return str_strip_impl(s, a, "rstrip", false, true); }

Value str_split_impl(const Value& self, CallArgs& args, bool from_right) {
    const char* name = from_right ? "rsplit" : "split";
    BoundArgs b(name, args, {"sep", "maxsplit"});
    std::optional<std::string> sep = optional_string(b, 0, name);
    if (sep && sep->empty()) throw_render_error("empty separator");
    int64_t maxsplit = b.get_int(1, -1);
    const std::string& s = self.as_string();
    return string_list(from_right ? py::rsplit(s, sep, maxsplit) : py::split(s, sep, maxsplit));
}
Value str_split(const Value& s, CallArgs& a) { return str_split_impl(s, a, false); }
Value str_rsplit(const Value& s, CallArgs& a) { return str_split_impl(s, a, true); }

Value str_splitlines(const Value& self, CallArgs& args) {
    BoundArgs b("splitlines", args, {"keepends"});
    return string_list(py::splitlines(self.as_string(), b.get_bool(0, false)));
}

// startswith / endswith: a string or a tuple of strings.
Value str_affix_impl(const Value& self, CallArgs& args, bool prefix) {
    const char* name = prefix ? "startswith" : "endswith";
    BoundArgs b(name, args, {"affix", "start", "end"});
    if (!b.has(0)) throw_render_error(std::string(name) + "() takes at least 1 argument (0 given)");
    std::string_view s = self.as_string();
    if (b.has(1) || b.has(2)) {
        Value part = slice(self, b.get_or(1, Value::none()), b.get_or(2, Value::none()), Value::none());
        CallArgs affix_only{{b.get(0)}, {}};
        return str_affix_impl(part, affix_only, prefix);
    }
    auto matches = [&](const Value& affix) {
        if (!affix.is_string())
            throw_render_error(std::string(name) + " first arg must be str or a tuple of str, not " + affix.type_name());
        const std::string& a = affix.as_string();
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (b.get(0).kind() == Kind::Tuple) {
        for (const Value& affix : b.get(0).as_list())
            if (matches(affix)) return Value(true);
        return Value(false);
    }
    return Value(matches(b.get(0)));
}
Value str_startswith(const Value& s, CallArgs& a) { return str_affix_impl(s, a, true); }
Value str_endswith(const Value& s, CallArgs& a) { return str_affix_impl(s, a, false); }

Value str_upper(const Value& s, CallArgs& a) {
    BoundArgs("upper", a, {});
    return Value(py::upper(s.as_string()));
}
Value str_lower(const Value& s, CallArgs& a) {
    BoundArgs("lower", a, {});
    return Value(py::lower(s.as_string()));
}
Value str_title(const Value& s, CallArgs& a) {
    BoundArgs("title", a, {});
    return Value(py::title(s.as_string()));
}
Value str_capitalize(const Value& s, CallArgs& a) {
    BoundArgs("capitalize", a, {});
    return Value(py::capitalize(s.as_string()));
}

Value str_replace(const Value& self, CallArgs& args) {
    BoundArgs b("replace", args, {"old", "new", "count"});
    if (!b.has(1)) throw_render_error("replace() takes at least 2 arguments");
    std::string old = b.get_string(0, ""), with = b.get_string(1, "");
    return Value(py::replace(self.as_string(), old, with, b.get_int(2, -1)));
}

Value str_find_impl(const Value& self, CallArgs& args, const char* name, bool from_right, bool must_exist) {
    BoundArgs b(name, args, {"sub"});
    int64_t at = py::find(self.as_string(), b.get_string(0, ""), from_right);
    if (at < 0 && must_exist) throw_render_error("substring not found");
    return Value(at);
}
Value str_find(const Value& s, CallArgs& a) { return str_find_impl(s, a, "find", false, false); }
Value str_rfind(const Value& s, CallArgs& a) { return str_find_impl(s, a, "rfind", true, false); }
Value str_index(const Value& s, CallArgs& a) { return str_find_impl(s, a, "index", false, true); }
Value str_rindex(const Value& s, CallArgs& a) { return str_find_impl(s, a, "rindex", true, true); }

Value str_count(const Value& self, CallArgs& args) {
    BoundArgs b("count", args, {"sub"});
    return Value(py::count(self.as_string(), b.get_string(0, "")));
}

Value str_join(const Value& self, CallArgs& args) {
    BoundArgs b("join", args, {"iterable"});
    std::string out;
    size_t i = 0;
    for (const Value& item : iterate(b.get(0))) {
        if (!item.is_string())
            throw_render_error("sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() +
                               " found");
        if (i++ > 0) out += self.as_string();
        out += item.as_string();
        if (out.size() > kMaxResultBytes) throw_render_error("join result exceeds the template engine's limit");
    }
    return Value(std::move(out));
}

// isalpha & co over ASCII letters/digits; non-ASCII characters count as letters.
template <bool (*Pred)(uint32_t)>
Value str_predicate(const Value& self, CallArgs& args) {
    BoundArgs("is...", args, {});
    const std::string& s = self.as_string();
    if (s.empty()) return Value(false);
    size_t i = 0;
    while (i < s.size())
        if (!Pred(utf8::decode(s, i))) return Value(false);
    return Value(true);
}
bool cp_digit(uint32_t c) { return c >= '0' && c <= '9'; }
bool cp_alpha(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0x80 && !py::is_space(c)); }
bool cp_alnum(uint32_t c) { return cp_digit(c) || cp_alpha(c); }
bool cp_space(uint32_t c) { return py::is_space(c); }

Value str_case_predicate(const Value& self, bool want_upper) {
    bool cased = false;
    for (char c : self.as_string()) {
        if (c >= 'a' && c <= 'z') {
            if (want_upper) return Value(false);
            cased = true;
        } else if (c >= 'A' && c <= 'Z') {
            if (!want_upper) return Value(false);
            cased = true;
        }
    }
    return Value(cased);
}
Value str_isupper(const Value& s, CallArgs& a) {
    BoundArgs("isupper", a, {});
    return str_case_predicate(s, true);
}
Value str_islower(const Value& s, CallArgs& a) {
    BoundArgs("islower", a, {});
    return str_case_predicate(s, false);
}

Value str_affix_remove(const Value& self, CallArgs& args, bool prefix) {
    BoundArgs b(prefix ? "removeprefix" : "removesuffix", args, {"affix"});
    std::string affix = b.get_string(0, "");
    const std::string& s = self.as_string();
    if (affix.size() > s.size()) return self;
    if (prefix && s.compare(0, affix.size(), affix) == 0) return Value(s.substr(affix.size()));
    if (!prefix && s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
        return Value(s.substr(0, s.size() - affix.size()));
    return self;
}
Value str_removeprefix(const Value& s, CallArgs& a) { return str_affix_remove(s, a, true); }
Value str_removesuffix(const Value& s, CallArgs& a) { return str_affix_remove(s, a, false); }

const MethodEntry kStrMethods[] = {
    {"strip", str_strip}, {"lstrip", str_lstrip}, {"rstrip", str_rstrip}, {"split", str_split},
    {"rsplit", str_rsplit}, {"splitlines", str_splitlines}, {"startswith", str_startswith},
    {"endswith", str_endswith}, {"upper", str_upper}, {"lower", str_lower}, {"title", str_title},
    {"capitalize", str_capitalize}, {"replace", str_replace}, {"find", str_find}, {"rfind", str_rfind},
    {"index", str_index}, {"rindex", str_rindex}, {"count", str_count}, {"join", str_join},
    {"isdigit", str_predicate<cp_digit>}, {"isnumeric", str_predicate<cp_digit>}, {"isdecimal", str_predicate<cp_digit>},
    {"isalpha", str_predicate<cp_alpha>}, {"isalnum", str_predicate<cp_alnum>}, {"isspace", str_predicate<cp_space>},
    {"isupper", str_isupper}, {"islower", str_islower}, {"removeprefix", str_removeprefix},
    {"removesuffix", str_removesuffix},
    // Python has these; calling them is refused with a clear message.
    {"casefold", nullptr}, {"center", nullptr}, {"encode", nullptr}, {"expandtabs", nullptr}, {"format", nullptr},
    {"format_map", nullptr}, {"isascii", nullptr}, {"isidentifier", nullptr}, {"isprintable", nullptr},
    {"istitle", nullptr}, {"ljust", nullptr}, {"maketrans", nullptr}, {"partition", nullptr}, {"rjust", nullptr},
    {"rpartition", nullptr}, {"swapcase", nullptr}, {"translate", nullptr}, {"zfill", nullptr},
};

// ---------------------------------------------------------------- dict

Value dict_items(const Value& self, CallArgs& args) {
    BoundArgs("items", args, {});
    List out;
    out.reserve(self.as_dict().entries.size());
    for (const auto& entry : self.as_dict().entries) out.emplace_back(List{Value(entry.first), entry.second}, true);
    return Value(std::move(out));
}
Value dict_keys(const Value& self, CallArgs& args) {
    BoundArgs("keys", args, {});
    return Value(iterate(self));
}
Value dict_values(const Value& self, CallArgs& args) {
    BoundArgs("values", args, {});
    List out;
    for (const auto& entry : self.as_dict().entries) out.push_back(entry.second);
    return Value(std::move(out));
}
Value dict_get(const Value& self, CallArgs& args) {
    BoundArgs b("get", args, {"key", "default"});
    if (!b.has(0)) throw_render_error("get expected at least 1 argument, got 0");
    if (b.get(0).is_string())
        if (const Value* v = self.as_dict().find(b.get(0).as_string())) return *v;
    return b.get_or(1, Value::none());
}
Value dict_copy(const Value& self, CallArgs& args) {
    BoundArgs("copy", args, {});
    return self;
}

const MethodEntry kDictMethods[] = {
    {"items", dict_items}, {"keys", dict_keys}, {"values", dict_values}, {"get", dict_get}, {"copy", dict_copy},
    {"fromkeys", nullptr},
};
const char* const kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};

// ---------------------------------------------------------------- list / tuple

Value list_count(const Value& self, CallArgs& args) {
    BoundArgs b("count", args, {"value"});
    int64_t n = 0;
    for (const Value& v : self.as_list())
        if (equals(v, b.get(0))) ++n;
    return Value(n);
}
Value list_index(const Value& self, CallArgs& args) {
    BoundArgs b("index", args, {"value"});
    const List& items = self.as_list();
    for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], b.get(0))) return Value(static_cast<int64_t>(i));
    throw_render_error(to_repr(b.get(0)) + " is not in list");
}
Value list_copy(const Value& self, CallArgs& args) {
    BoundArgs("copy", args, {});
    return self;
}

const MethodEntry kListMethods[] = {{"count", list_count}, {"index", list_index}, {"copy", list_copy}};
const MethodEntry kTupleMethods[] = {{"count", list_count}, {"index", list_index}};
const char* const kListMutators[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

template <size_t N>
const MethodEntry* lookup(const MethodEntry (&table)[N], std::string_view name) {
    for (const MethodEntry& entry : table)
        if (name == entry.name) return &entry;
    return nullptr;
}

template <size_t N>
bool is_mutator(const char* const (&names)[N], std::string_view name) {
    for (const char* n : names)
        if (name == n) return true;
    return false;
}

Value unsafe(const Value& self, std::string_view name) {
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + self.type_name() +
                            "' object is unsafe.");
}

}  // namespace

Value find_method(const Value& self, std::string_view name) {
    const MethodEntry* entry = nullptr;
    switch (self.kind()) {
        case Kind::String: entry = lookup(kStrMethods, name); break;
        case Kind::Dict:
            if (is_mutator(kDictMutators, name)) return unsafe(self, name);
            entry = lookup(kDictMethods, name);
            break;
        case Kind::List:
            if (is_mutator(kListMutators, name)) return unsafe(self, name);
            entry = lookup(kListMethods, name);
            break;
        case Kind::Tuple: entry = lookup(kTupleMethods, name); break;
        default: break;
    }
    if (entry == nullptr) return Value();
    return Value(std::make_shared<BoundMethod>(self, *entry));
}

}  // namespace vllm::chat::jinja
