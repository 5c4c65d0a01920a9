#include "chat/jinja/value.h"

#include <algorithm>
#include <cmath>

#include "chat/jinja/error.h"
#include "chat/jinja/py_str.h"

namespace vllm::chat::jinja {

const Value* Dict::find(std::string_view key) const {
    for (const auto& entry : entries)
        if (entry.first == key) return &entry.second;
    return nullptr;
}

void Dict::set(std::string key, Value v) {
    for (auto& entry : entries) {
        if (entry.first == key) {
            entry.second = std::move(v);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(v));
}

Value Value::undefined(std::string hint) {
    Value v;
    v.data_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}

Value::Value(std::string s) : kind_(Kind::String), data_(std::make_shared<const std::string>(std::move(s))) {}
Value::Value(List items, bool tuple) : kind_(tuple ? Kind::Tuple : Kind::List) {
    int below = 0;
    for (const Value& item : items) below = std::max(below, item.depth_);
    set_depth(below);
    data_ = std::make_shared<const List>(std::move(items));
}
Value::Value(Dict dict) : kind_(Kind::Dict) {
    int below = 0;
    for (const auto& entry : dict.entries) below = std::max(below, entry.second.depth_);
    set_depth(below);
    data_ = std::make_shared<const Dict>(std::move(dict));
}

void Value::set_depth(int below) {
    if (below >= kMaxDepth) throw_render_error(RecursionGuard::refusal(kNesting, below + 1));
    depth_ = below + 1;
}

thread_local int ValueWalkStep::depth_ = 0;

ValueWalkStep::ValueWalkStep() : guard_(Value::kNesting, depth_, throw_render_error) {}
Value::Value(std::shared_ptr<Object> object) : kind_(Kind::Object), data_(std::move(object)) {}

int64_t Value::as_int() const {
    if (kind_ == Kind::Bool) return std::get<bool>(data_) ? 1 : 0;
    return std::get<int64_t>(data_);
}

double Value::as_double() const {
    if (kind_ == Kind::Float) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

const std::string& Value::as_string() const { return *std::get<StringPtr>(data_); }
const List& Value::as_list() const { return *std::get<ListPtr>(data_); }
const Dict& Value::as_dict() const { return *std::get<DictPtr>(data_); }
Object& Value::as_object() const { return *std::get<ObjectPtr>(data_); }
const std::shared_ptr<Object>& Value::object_ptr() const { return std::get<ObjectPtr>(data_); }

const std::string& Value::undefined_hint() const {
    static const std::string kNone = "value is undefined";
    if (auto* hint = std::get_if<StringPtr>(&data_)) return **hint;
    return kNone;
}

const char* Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return "list";
        case Kind::Tuple: return "tuple";
        case Kind::Dict: return "dict";
        case Kind::Object: return as_object().type_name();
    }
    return "?";
}

// ---------------------------------------------------------------- Object

Value Object::get_attr(std::string_view name) const {
    return Value::undefined(std::string("'") + type_name() + "' object has no attribute '" + std::string(name) + "'");
}

bool Object::set_attr(const std::string&, Value) { return false; }

Value Object::call(Interpreter&, CallArgs&) {
    throw_render_error(std::string("'") + type_name() + "' object is not callable");
}

std::string Object::str() const { return std::string("<") + type_name() + " object>"; }

// ---------------------------------------------------------------- semantics

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return v.as_bool();
        case Kind::Int: return v.as_int() != 0;
        case Kind::Float: return v.as_double() != 0.0;
        case Kind::String: return !v.as_string().empty();
        case Kind::List:
        case Kind::Tuple: return !v.as_list().empty();
        case Kind::Dict: return !v.as_dict().entries.empty();
        case Kind::Object: return true;
    }
    return false;
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.is_list() && b.is_list()) {
        if (a.kind() != b.kind()) return false;  // Python: [1] != (1,)
        const ValueWalkStep step;
        const List& x = a.as_list();
        const List& y = b.as_list();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (!equals(x[i], y[i])) return false;
        return true;
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.as_string() == b.as_string();
        case Kind::Dict: {
            const ValueWalkStep step;
            const Dict& x = a.as_dict();
            const Dict& y = b.as_dict();
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto& entry : x.entries) {
                const Value* other = y.find(entry.first);
                if (other == nullptr || !equals(entry.second, *other)) return false;
            }
            return true;
        }
        case Kind::Object: return a.object_ptr() == b.object_ptr();
        default: return false;
    }
}

namespace {

void append_repr(std::string& out, const Value& v);

void append_sequence(std::string& out, const List& items, bool tuple) {
    const ValueWalkStep step;
    out += tuple ? '(' : '[';
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, items[i]);
    }
    if (tuple && items.size() == 1) out += ',';
    out += tuple ? ')' : ']';
}

void append_repr(std::string& out, const Value& v) {
    switch (v.kind()) {
        case Kind::String: out += py::repr(v.as_string()); return;
        case Kind::List:
        case Kind::Tuple: append_sequence(out, v.as_list(), v.kind() == Kind::Tuple); return;
        case Kind::Dict: {
            const ValueWalkStep step;
            out += '{';
            bool first = true;
            for (const auto& entry : v.as_dict().entries) {
                if (!first) out += ", ";
                first = false;
                out += py::repr(entry.first);
                out += ": ";
                append_repr(out, entry.second);
            }
            out += '}';
            return;
        }
        case Kind::Undefined: out += "Undefined"; return;
        default: append_str(out, v); return;
    }
}

}  // namespace

void append_str(std::string& out, const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return;
        case Kind::None: out += "None"; return;
        case Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
        case Kind::Int: out += std::to_string(v.as_int()); return;
        case Kind::Float: out += json::format_float(v.as_double()); return;
        case Kind::String: out += v.as_string(); return;
        case Kind::Object: out += v.as_object().str(); return;
        default: append_repr(out, v); return;
    }
}

std::string to_str(const Value& v) {
    if (v.is_string()) return v.as_string();
    std::string out;
    append_str(out, v);
    return out;
}

std::string to_repr(const Value& v) {
    std::string out;
    append_repr(out, v);
    return out;
}

Value from_json(const json::Value& v) {
    switch (v.kind()) {
        case json::Kind::Null: return Value::none();
        case json::Kind::Bool: return Value(v.as_bool());
        case json::Kind::Int: return Value(v.as_int());
        case json::Kind::Float: return Value(v.as_double());
        case json::Kind::String: return Value(v.as_string());
        case json::Kind::Array: {
            const ValueWalkStep step;
            List items;
            items.reserve(v.items().size());
            for (const json::Value& item : v.items()) items.push_back(from_json(item));
            return Value(std::move(items));
        }
        case json::Kind::Object: {
            const ValueWalkStep step;
            Dict dict;
            dict.entries.reserve(v.members().size());
            for (const auto& member : v.members()) dict.entries.emplace_back(member.first, from_json(member.second));
            return Value(std::move(dict));
        }
    }
    return Value::none();
}

json::Value to_json(const Value& v) {
    switch (v.kind()) {
        case Kind::None: return json::Value(nullptr);
        case Kind::Bool: return json::Value(v.as_bool());
        case Kind::Int: return json::Value(v.as_int());
        case Kind::Float: return json::Value(v.as_double());
        case Kind::String: return json::Value(v.as_string());
        case Kind::List:
        case Kind::Tuple: {
            const ValueWalkStep step;
            json::Value out = json::Value::array();
            for (const Value& item : v.as_list()) out.push_back(to_json(item));
            return out;
        }
        case Kind::Dict: {
            const ValueWalkStep step;
            json::Value out = json::Value::object();
            for (const auto& entry : v.as_dict().entries) out.members().emplace_back(entry.first, to_json(entry.second));
            return out;
        }
        default:
            throw_render_error(std::string("Object of type ") + v.type_name() + " is not JSON serializable");
    }
}

}  // namespace vllm::chat::jinja
