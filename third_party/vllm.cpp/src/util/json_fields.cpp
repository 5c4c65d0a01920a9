#include "util/json_fields.h"

#include <cmath>

#include "util/error.h"

namespace vllm::json {

namespace {
std::string number_text(double d) {
    return d == std::floor(d) && std::fabs(d) < 1e15 ? std::to_string(static_cast<int64_t>(d)) : format_float(d);
}
}  // namespace

Value parse_object(std::string_view text, const std::string& what) {
    Value value;
    try {
        value = parse(text);
    } catch (const Error& e) {
        throw_invalid_argument(what + " is not valid JSON: " + e.what());
    }
    if (!value.is_object()) throw_invalid_argument(what + " must be a JSON object (got " + dump(value) + ")");
    return value;
}

const Value* field(const Value& object, std::string_view key) {
    const Value* v = object.find(key);
    return v != nullptr && !v->is_null() ? v : nullptr;
}

void wrong_type(const std::string& name, const std::string& expected, const Value& got) {
    throw_invalid_argument("'" + name + "' must be " + expected + " (got " + kind_name(got.kind()) + ")");
}

void out_of_range(const std::string& name, const std::string& range, double got) {
    throw_invalid_argument("'" + name + "' must be " + range + " (got " + number_text(got) + ")");
}

double read_number(const Value& v, const std::string& name) {
    if (!v.is_number()) wrong_type(name, "a number", v);
    return v.as_double();
}

int64_t read_integer(const Value& v, const std::string& name) {
    if (v.is_int()) return v.as_int();
    if (v.is_float()) {
        const double d = v.as_double();
        if (d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
    }
    wrong_type(name, "an integer", v);
}

int32_t read_int32_in(const Value& v, const std::string& name, int64_t lo, int64_t hi, const std::string& range) {
    const int64_t i = read_integer(v, name);
    if (i < lo || i > hi) out_of_range(name, range, static_cast<double>(i));
    return static_cast<int32_t>(i);
}

bool read_bool(const Value& v, const std::string& name) {
    if (!v.is_bool()) wrong_type(name, "a boolean", v);
    return v.as_bool();
}

const std::string& read_string(const Value& v, const std::string& name) {
    if (!v.is_string()) wrong_type(name, "a string", v);
    return v.as_string();
}

void require_object(const Value& v, const std::string& name) {
    if (!v.is_object()) wrong_type(name, "an object", v);
}

void require_array(const Value& v, const std::string& name) {
    if (!v.is_array()) wrong_type(name, "an array", v);
}

const std::string& required_string(const Value& object, std::string_view key, const std::string& owner) {
    const Value* v = field(object, key);
    const std::string name = owner + "." + std::string(key);
    if (v == nullptr) throw_invalid_argument("'" + name + "' is required");
    return read_string(*v, name);
}

}  // namespace vllm::json
