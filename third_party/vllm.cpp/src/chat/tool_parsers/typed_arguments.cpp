#include "chat/tool_parsers/typed_arguments.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "chat/tool_parsers/python_calls.h"
#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view trim(std::string_view s) {
    const size_t begin = s.find_first_not_of(" \t\r\n\f\v");
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(" \t\r\n\f\v") - begin + 1);
}

// Python's numeric literal text: underscores only between digits; they go.
std::optional<std::string> without_underscores(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '_') {
            out += s[i];
            continue;
        }
        const bool between_digits = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                                    std::isdigit(static_cast<unsigned char>(s[i + 1]));
        if (!between_digits) return std::nullopt;
    }
    return out;
}

// Python's int(text) for base 10, when it fits 64 bits.
std::optional<int64_t> python_int(std::string_view text) {
    const std::optional<std::string> digits = without_underscores(trim(text));
    if (!digits || digits->empty()) return std::nullopt;
    size_t i = (*digits)[0] == '+' || (*digits)[0] == '-' ? 1 : 0;
    if (i == digits->size()) return std::nullopt;
    for (size_t j = i; j < digits->size(); ++j)
        if (!std::isdigit(static_cast<unsigned char>((*digits)[j]))) return std::nullopt;
    errno = 0;
    const long long v = std::strtoll(digits->c_str(), nullptr, 10);
    if (errno == ERANGE) return std::nullopt;
    return static_cast<int64_t>(v);
}

// Python's float(text): decimal and exponent forms, inf and nan (no hex).
std::optional<double> python_float(std::string_view text) {
    const std::optional<std::string> s = without_underscores(trim(text));
    if (!s || s->empty() || s->find_first_of("xX") != std::string::npos) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(s->c_str(), &end);
    if (end != s->c_str() + s->size()) return std::nullopt;
    return v;
}

std::optional<json::Value> literal(std::string_view text) {
    // ast.literal_eval ignores leading spaces and tabs.
    const size_t begin = text.find_first_not_of(" \t");
    return parse_python_literal(begin == std::string_view::npos ? std::string_view() : text.substr(begin));
}

std::string declared_type(const json::Value* schema) {
    if (schema == nullptr || !schema->is_object()) return "string";
    const json::Value* type = schema->find("type");
    if (type == nullptr) return "string";
    // str() of a list of types ("['string', 'null']") matches none of the names below.
    return type->is_string() ? lower(trim(type->as_string())) : "[" + json::dump(*type);
}

}  // namespace

const json::Value* tool_parameter_schema(const json::Value& tools, std::string_view function, std::string_view param) {
    if (!tools.is_array()) return nullptr;
    for (const json::Value& tool : tools.items()) {
        const json::Value* f = tool.is_object() ? tool.find("function") : nullptr;
        const json::Value* name = f != nullptr && f->is_object() ? f->find("name") : nullptr;
        if (name == nullptr || !name->is_string() || name->as_string() != function) continue;
        const json::Value* parameters = f->find("parameters");
        if (parameters == nullptr || !parameters->is_object()) return nullptr;
        const json::Value* properties = parameters->find("properties");
        // vLLM reads a schema without "properties" as the properties themselves.
        const json::Value& declared = properties != nullptr && properties->is_object() ? *properties : *parameters;
        return declared.find(param);
    }
    return nullptr;
}

json::Value qwen3_coder_argument(std::string_view value, const json::Value* schema) {
    if (lower(value) == "null") return nullptr;
    if (schema == nullptr) return json::Value(value);
    const std::string type = declared_type(schema);
    for (const char* s : {"string", "str", "text", "varchar", "char", "enum"})
        if (type == s) return json::Value(value);
    if (starts_with(type, "int") || starts_with(type, "uint") || starts_with(type, "long") ||
        starts_with(type, "short") || starts_with(type, "unsigned")) {
        const std::optional<int64_t> i = python_int(value);
        return i ? json::Value(*i) : json::Value(value);
    }
    if (starts_with(type, "num") || starts_with(type, "float")) {
        const std::optional<double> f = python_float(value);
        if (!f || !std::isfinite(*f)) return json::Value(value);  // int(inf) fails: the string stays
        if (*f == std::trunc(*f) && std::fabs(*f) < 9.2e18) return json::Value(static_cast<int64_t>(*f));
        return json::Value(*f);
    }
    if (type == "boolean" || type == "bool" || type == "binary") return json::Value(lower(value) == "true");
    if (type == "object" || type == "array" || type == "arr" || starts_with(type, "dict") || starts_with(type, "list")) {
        if (std::optional<json::Value> v = try_parse_json(value)) return std::move(*v);
    }
    if (std::optional<json::Value> v = literal(value)) return std::move(*v);
    return json::Value(value);
}

json::Value glm45_argument(std::string_view value, const json::Value* schema) {
    if (schema != nullptr && schema->is_object()) {
        const json::Value* type = schema->find("type");
        if (type != nullptr && type->is_string() && type->as_string() == "string") return json::Value(value);
    }
    if (std::optional<json::Value> v = try_parse_json(value)) return std::move(*v);
    if (std::optional<json::Value> unescaped = try_parse_json("\"" + std::string(value) + "\"")) {
        if (std::optional<json::Value> v = try_parse_json(unescaped->as_string())) return std::move(*v);
    }
    if (std::optional<json::Value> v = literal(value)) return std::move(*v);
    return json::Value(value);
}

}  // namespace vllm::chat
