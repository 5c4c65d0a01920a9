#include "structured/json_schema.h"

#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/builtin_grammars.h"
#include "structured/regex.h"
#include "util/error.h"
#include "util/json.h"
#include "util/recursion_budget.h"

namespace vllm::structured {

namespace {

using json::Value;

const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples",  "$schema",
                                             "$id",      "$comment",    "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> kSupported = {
    "type",     "properties", "required",  "additionalProperties", "enum",      "const",       "anyOf",
    "oneOf",    "allOf",      "$ref",      "$defs",                "definitions", "items",     "prefixItems",
    "minItems", "maxItems",   "minLength", "maxLength",            "pattern",   "format",      "minimum",
    "maximum",  "exclusiveMinimum",        "exclusiveMaximum"};
// Keywords that only hold definitions for $ref: not constraints on the value itself.
const std::set<std::string> kContainers = {"$defs", "definitions"};

// Inside the quotes of a string of each format.
const std::map<std::string, std::string> kFormats = {
    {"date",
     R"([0-9]{4} "-" ( ( "01" | "03" | "05" | "07" | "08" | "10" | "12" ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "04" | "06" | "09" | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02" "-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))"},
    {"time",
     R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))"},
    {"uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
    // Bounded as mail and DNS bound them (a 64-byte local part, 63-byte
    // labels), up to 8 dots on either side.
    {"email",
     R"([a-zA-Z0-9_+-]{1,64} ( "." [a-zA-Z0-9_+-]{1,64} ){0,8} "@" [a-zA-Z0-9-]{1,63} ( "." [a-zA-Z0-9-]{1,63} ){1,8})"},
};

std::string paren(const std::string& expr) { return expr.empty() ? std::string() : "( " + expr + " )"; }

std::string join_alternatives(const std::vector<std::string>& alternatives) {
    std::string out;
    for (const std::string& alt : alternatives) out += (out.empty() ? "" : " | ") + paren(alt);
    return out;
}

std::string any_digits(size_t n) {
    if (n == 0) return "";
    return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

// Decimal strings of equal length from a to b (a <= b) as GBNF.
std::string same_length_range(const std::string& a, const std::string& b) {
    if (a.empty()) return "";
    if (a == b) return "\"" + a + "\"";
    if (a[0] == b[0]) return "\"" + a.substr(0, 1) + "\" " + paren(same_length_range(a.substr(1), b.substr(1)));
    const size_t tail = a.size() - 1;
    const std::string zeros(tail, '0'), nines(tail, '9');
    // Leading digits whose every tail is in range.
    const char full_lo = a.substr(1) == zeros ? a[0] : static_cast<char>(a[0] + 1);
    const char full_hi = b.substr(1) == nines ? b[0] : static_cast<char>(b[0] - 1);
    std::vector<std::string> alternatives;
    if (full_lo != a[0]) alternatives.push_back("\"" + a.substr(0, 1) + "\" " + paren(same_length_range(a.substr(1), nines)));
    if (full_lo <= full_hi) {
        const std::string digit = full_lo == full_hi ? "\"" + std::string(1, full_lo) + "\""
                                                     : std::string("[") + full_lo + "-" + full_hi + "]";
        alternatives.push_back(digit + any_digits(tail));
    }
    if (full_hi != b[0]) alternatives.push_back("\"" + b.substr(0, 1) + "\" " + paren(same_length_range(zeros, b.substr(1))));
    return join_alternatives(alternatives);
}

// Non-negative integers in [lo, hi] (hi < 0: unbounded) without leading zeros.
std::string uint_range(int64_t lo, int64_t hi) {
    const size_t lo_len = std::to_string(lo).size();
    const size_t hi_len = hi < 0 ? lo_len : std::to_string(hi).size();
    std::vector<std::string> alternatives;
    for (size_t len = lo_len; len <= hi_len; ++len) {
        const std::string a = len == lo_len ? std::to_string(lo) : "1" + std::string(len - 1, '0');
        const std::string b = (hi >= 0 && len == hi_len) ? std::to_string(hi) : std::string(len, '9');
        alternatives.push_back(same_length_range(a, b));
    }
    // Unbounded above: longer numbers up to kMaxIntegerDigits digits.
    if (hi < 0 && lo_len < static_cast<size_t>(kMaxIntegerDigits))
        alternatives.push_back("[1-9] [0-9]{" + std::to_string(lo_len) + "," + std::to_string(kMaxIntegerDigits - 1) + "}");
    return join_alternatives(alternatives);
}

struct Bounds {
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;
};

std::string int_range(const Bounds& b) {
    std::vector<std::string> alternatives;
    if (!b.has_hi || b.hi >= 0) alternatives.push_back(uint_range(b.has_lo ? std::max<int64_t>(b.lo, 0) : 0, b.has_hi ? b.hi : -1));
    if (!b.has_lo || b.lo < 0)
        alternatives.push_back("\"-\" " + paren(uint_range(b.has_hi && b.hi < 0 ? -b.hi : 1, b.has_lo ? -b.lo : -1)));
    return join_alternatives(alternatives);
}

class SchemaCompiler {
public:
    explicit SchemaCompiler(const Value& root) : root_(root) {}

    std::string compile() {
        reserve("root");
        refs_["#"] = "root";
        const std::string root_expr = visit(root_, "#", "root");
        std::string out = "root ::= " + root_expr + "\n";
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        return out + json_value_rules();
    }

private:
    [[noreturn]] static void fail(const std::string& path, const std::string& what) {
        throw_invalid_argument("JSON schema: " + what + " (at " + path + ")");
    }

    std::string reserve(const std::string& base) {
        std::string clean;
        for (char c : base) clean += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '-';
        std::string name = clean;
        for (int n = 2; !names_.insert(name).second; ++n) name = clean + "-" + std::to_string(n);
        return name;
    }
    std::string add_rule(const std::string& base, const std::string& body) {
        const std::string name = reserve(base);
        rules_.emplace_back(name, body);
        return name;
    }

    // One rule per distinct scalar expression: a bounded integer or string
    // lowers to a chain of helper rules, and an object with thousands of
    // such properties must not repeat that chain for each of them.
    std::string shared_rule(const std::string& body) {
        auto [it, inserted] = shared_rules_.emplace(body, std::string());
        // No dash in the name: the GBNF parser names a rule's helpers
        // "<rule>-<n>", which must not meet another scalar rule's name.
        if (inserted) it->second = add_rule("scalar" + std::to_string(shared_rules_.size()), body);
        return it->second;
    }

    static int64_t whole_number(const Value& v, const std::string& key, const std::string& path, bool non_negative) {
        if (!v.is_number()) fail(path, "'" + key + "' must be a number");
        const double d = v.as_double();
        if (std::fabs(d) > 1e18) fail(path, "'" + key + "' is out of the supported range");
        if (non_negative && (d < 0 || d != std::floor(d))) fail(path, "'" + key + "' must be a non-negative integer");
        return static_cast<int64_t>(d);
    }
    static int64_t count(const Value& schema, const std::string& key, const std::string& path, int64_t fallback) {
        const Value* v = schema.find(key);
        return v ? whole_number(*v, key, path, true) : fallback;
    }

    static void check_keywords(const Value& schema, const std::string& path) {
        for (const auto& [key, value] : schema.members())
            if (!kSupported.count(key) && !kAnnotations.count(key)) fail(path, "unsupported keyword '" + key + "'");
    }
    // Constraint keywords other than `except`.
    static std::vector<std::string> constraints_besides(const Value& schema, const std::string& except) {
        std::vector<std::string> out;
        for (const auto& [key, value] : schema.members())
            if (key != except && !kAnnotations.count(key) && !kContainers.count(key)) out.push_back(key);
        return out;
    }

    // Subschemas nest through properties, items, combinators and $ref
    // chains (a chain of 20,000 $defs each referring to the next ran the
    // stack out): each visit is one level of this walk.
    static constexpr RecursionLimit kNesting{"the schema (its subschemas and $ref chains)", 1000};
    // allOf inlines its parts' properties at each use, so a schema can
    // expand exponentially (each level's properties merging the next level
    // twice): the visits in one compile are bounded.
    static constexpr int64_t kMaxVisits = 500000;

    std::string visit(const Value& schema, const std::string& path, const std::string& name) {
        if (++visits_ > kMaxVisits)
            fail(path, "the schema expands to more than " + std::to_string(kMaxVisits) +
                           " subschemas (allOf inlines its parts at every use)");
        const RecursionGuard guard(kNesting, depth_, [&](const std::string& why) { fail(path, why); });
        if (schema.is_bool()) {
            if (!schema.as_bool()) fail(path, "schema false admits no value");
            return "json-value";
        }
        if (!schema.is_object()) fail(path, "a schema must be an object or a boolean");
        check_keywords(schema, path);

        for (const char* combinator : {"$ref", "anyOf", "oneOf"}) {
            if (!schema.contains(combinator)) continue;
            const std::vector<std::string> others = constraints_besides(schema, combinator);
            if (!others.empty())
                fail(path, std::string("'") + combinator + "' together with '" + others[0] + "' is not supported");
        }
        if (const Value* ref = schema.find("$ref")) return resolve_ref(*ref, path);
        if (const Value* c = schema.find("const")) return gbnf_literal(json::dump(*c));
        if (const Value* e = schema.find("enum")) {
            if (!e->is_array() || e->items().empty()) fail(path, "'enum' must be a non-empty array");
            std::vector<std::string> alternatives;
            for (const Value& v : e->items()) alternatives.push_back(gbnf_literal(json::dump(v)));
            return paren(join_alternatives(alternatives));
        }
        for (const char* combinator : {"anyOf", "oneOf"}) {
            const Value* list = schema.find(combinator);
            if (!list) continue;
            if (!list->is_array() || list->items().empty()) fail(path, std::string("'") + combinator + "' must be a non-empty array");
            std::vector<std::string> alternatives;
            for (size_t i = 0; i < list->items().size(); ++i)
                alternatives.push_back(visit(list->items()[i], path + "/" + combinator + "/" + std::to_string(i),
                                             name + "-" + std::to_string(i)));
            return paren(join_alternatives(alternatives));
        }
        if (schema.contains("allOf")) return visit_object(merge_all_of(schema, path), path, name);

        const Value* type = schema.find("type");
        if (!type) return visit_typed(schema, inferred_type(schema), path, name);
        if (type->is_string()) return visit_typed(schema, type->as_string(), path, name);
        if (!type->is_array() || type->items().empty()) fail(path, "'type' must be a string or a non-empty array of strings");
        std::vector<std::string> alternatives;
        for (const Value& t : type->items()) {
            if (!t.is_string()) fail(path, "'type' must be a string or a non-empty array of strings");
            alternatives.push_back(visit_typed(schema, t.as_string(), path, name + "-" + t.as_string()));
        }
        return paren(join_alternatives(alternatives));
    }

    static std::string inferred_type(const Value& schema) {
        for (const char* k : {"properties", "additionalProperties", "required"})
            if (schema.contains(k)) return "object";
        for (const char* k : {"items", "prefixItems", "minItems", "maxItems"})
            if (schema.contains(k)) return "array";
        for (const char* k : {"minLength", "maxLength", "pattern", "format"})
            if (schema.contains(k)) return "string";
        for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
            if (schema.contains(k)) return "number";
        return "any";
    }

    std::string visit_typed(const Value& schema, const std::string& type, const std::string& path, const std::string& name) {
        if (type == "any") return "json-value";
        if (type == "string") return shared_rule(visit_string(schema, path));
        if (type == "integer") return shared_rule(int_range(integer_bounds(schema, path)));
        if (type == "number") return shared_rule(visit_number(schema, path));
        if (type == "boolean") return "( \"true\" | \"false\" )";
        if (type == "null") return "\"null\"";
        if (type == "object") return visit_object(schema, path, name);
        if (type == "array") return visit_array(schema, path, name);
        fail(path, "unknown type '" + type + "'");
    }

    std::string resolve_ref(const Value& ref_value, const std::string& path) {
        if (!ref_value.is_string()) fail(path, "'$ref' must be a string");
        const std::string& ref = ref_value.as_string();
        auto known = refs_.find(ref);
        if (known != refs_.end()) return known->second;
        std::string last;
        const Value& target = pointer_target(ref, path, last);
        // Reserve the rule before compiling its body so that recursion refers to it.
        const std::string rule = reserve("ref-" + last);
        refs_[ref] = rule;
        const std::string body = visit(target, ref, rule);
        rules_.emplace_back(rule, body);
        return rule;
    }

    // What a local $ref points to: a JSON pointer from the root (~1 is '/',
    // ~0 is '~'); `last` gets its last token.
    const Value& pointer_target(const std::string& ref, const std::string& path, std::string& last) const {
        if (ref.empty() || ref[0] != '#') fail(path, "only local $ref ('#...') are supported, not '" + ref + "'");
        const Value* target = &root_;
        for (size_t pos = 1; pos < ref.size();) {
            if (ref[pos] != '/') fail(path, "unresolvable $ref '" + ref + "'");
            const size_t next = std::min(ref.find('/', pos + 1), ref.size());
            std::string token;
            for (size_t i = pos + 1; i < next; ++i) {
                if (ref[i] == '~' && i + 1 < next && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
                    token += ref[++i] == '0' ? '~' : '/';
                } else {
                    token += ref[i];
                }
            }
            target = target->is_object() ? member(*target, token) : nullptr;
            if (!target) fail(path, "unresolvable $ref '" + ref + "'");
            last = std::move(token);
            pos = next;
        }
        return *target;
    }

    // A member of an object; large ones ($defs with thousands of entries)
    // get an index, so that resolving every $ref stays linear in all.
    const Value* member(const Value& object, const std::string& key) const {
        constexpr size_t kIndexFrom = 16;
        if (object.members().size() < kIndexFrom) return object.find(key);
        auto [index, inserted] = member_index_.try_emplace(&object);
        if (inserted)
            for (const auto& [name, value] : object.members()) index->second.emplace(name, &value);
        auto found = index->second.find(key);
        return found == index->second.end() ? nullptr : found->second;
    }

    const Value& deref(const Value& schema, const std::string& path) const {
        const Value* s = &schema;
        for (int hops = 0; s->is_object() && s->contains("$ref"); ++hops) {
            if (hops > 32) fail(path, "$ref chain too long");
            const Value& ref = *s->find("$ref");
            if (!ref.is_string()) fail(path, "'$ref' must be a string");
            std::string last;
            s = &pointer_target(ref.as_string(), path, last);
        }
        return *s;
    }

    // allOf of object schemas: one object with every part's properties and required keys.
    Value merge_all_of(const Value& schema, const std::string& path) {
        const Value* list = schema.find("allOf");
        if (!list->is_array() || list->items().empty()) fail(path, "'allOf' must be a non-empty array");
        Value properties = Value::object();
        Value required = Value::array();
        Value merged = Value::object();
        merged.set("type", "object");
        std::vector<const Value*> parts = {&schema};
        for (const Value& item : list->items()) parts.push_back(&deref(item, path + "/allOf"));
        for (const Value* part : parts) {
            if (!part->is_object()) fail(path, "allOf is supported for object schemas only");
            check_keywords(*part, path + "/allOf");
            for (const auto& [key, value] : part->members()) {
                if (key == "allOf" || kAnnotations.count(key) || kContainers.count(key)) continue;
                if (key == "type") {
                    if (!value.is_string() || value.as_string() != "object")
                        fail(path, "allOf is supported for object schemas only (a part has type " + json::dump(value) + ")");
                } else if (key == "properties") {
                    if (!value.is_object()) fail(path, "'properties' must be an object");
                    for (const auto& [prop, sub] : value.members()) properties.set(prop, sub);
                } else if (key == "required") {
                    if (!value.is_array()) fail(path, "'required' must be an array of strings");
                    for (const Value& r : value.items()) required.push_back(r);
                } else if (key == "additionalProperties") {
                    merged.set(key, value);
                } else {
                    fail(path, "allOf is supported for object schemas only (a part has '" + key + "')");
                }
            }
        }
        merged.set("properties", properties);
        merged.set("required", required);
        return merged;
    }

    std::string visit_string(const Value& schema, const std::string& path) {
        const Value* pattern = schema.find("pattern");
        const Value* format = schema.find("format");
        const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
        if ((pattern && (format || lengths)) || (format && lengths))
            fail(path, "combining 'pattern', 'format' and length bounds on one string is not supported");
        if (format) {
            if (!format->is_string()) fail(path, "'format' must be a string");
            const std::string& f = format->as_string();
            if (f == "date-time") return "\"\\\"\" " + kFormats.at("date") + " \"T\" " + kFormats.at("time") + " \"\\\"\"";
            auto found = kFormats.find(f);
            if (found == kFormats.end()) fail(path, "unsupported format '" + f + "'");
            return "\"\\\"\" " + found->second + " \"\\\"\"";
        }
        if (pattern) {
            if (!pattern->is_string()) fail(path, "'pattern' must be a string");
            try {
                return "\"\\\"\" " + regex_to_gbnf(pattern->as_string(), RegexOptions{true}) + " \"\\\"\"";
            } catch (const Error& e) {
                fail(path + "/pattern", e.what());
            }
        }
        const int64_t min = count(schema, "minLength", path, 0);
        const int64_t max = count(schema, "maxLength", path, -1);
        if (max >= 0 && min > max) fail(path, "minLength exceeds maxLength");
        std::string repetition = max < 0 ? (min == 0 ? "*" : "{" + std::to_string(min) + ",}")
                                         : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
        return "\"\\\"\" json-char" + repetition + " \"\\\"\"";
    }

    static Bounds integer_bounds(const Value& schema, const std::string& path) {
        Bounds b;
        auto bound = [&](const char* key, bool lower, bool exclusive) {
            const Value* v = schema.find(key);
            if (!v) return;
            if (!v->is_number()) fail(path, std::string("'") + key + "' must be a number");
            const double d = v->as_double();
            if (std::fabs(d) > 1e18) fail(path, std::string("'") + key + "' is out of the supported range");
            int64_t x = lower ? (exclusive ? static_cast<int64_t>(std::floor(d)) + 1 : static_cast<int64_t>(std::ceil(d)))
                              : (exclusive ? static_cast<int64_t>(std::ceil(d)) - 1 : static_cast<int64_t>(std::floor(d)));
            if (lower) {
                b.lo = b.has_lo ? std::max(b.lo, x) : x;
                b.has_lo = true;
            } else {
                b.hi = b.has_hi ? std::min(b.hi, x) : x;
                b.has_hi = true;
            }
        };
        bound("minimum", true, false);
        bound("exclusiveMinimum", true, true);
        bound("maximum", false, false);
        bound("exclusiveMaximum", false, true);
        if (b.has_lo && b.has_hi && b.lo > b.hi) fail(path, "the integer range is empty");
        return b;
    }

    static std::string visit_number(const Value& schema, const std::string& path) {
        for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"})
            if (schema.contains(k)) fail(path, std::string("'") + k + "' on a number is not supported (use minimum/maximum or integer)");
        const bool bounded = schema.contains("minimum") || schema.contains("maximum");
        if (!bounded) return "json-number";
        for (const char* k : {"minimum", "maximum"}) {
            const Value* v = schema.find(k);
            if (v && (!v->is_number() || v->as_double() != std::floor(v->as_double())))
                fail(path, std::string("'") + k + "' on a number must be a whole number to be expressible");
        }
        const Bounds b = integer_bounds(schema, path);
        // Whole numbers in range, I.fff with I in [max(lo,0), hi-1], and -I.fff with I in [max(0,-hi), -lo-1].
        std::vector<std::string> alternatives = {int_range(b)};
        const std::string fraction = " \".\" [0-9]{1," + std::to_string(kMaxFractionDigits) + "}";
        const int64_t pos_lo = b.has_lo ? std::max<int64_t>(b.lo, 0) : 0;
        if (!b.has_hi || pos_lo <= b.hi - 1) alternatives.push_back(paren(uint_range(pos_lo, b.has_hi ? b.hi - 1 : -1)) + fraction);
        const int64_t neg_lo = b.has_hi ? std::max<int64_t>(0, -b.hi) : 0;
        if (!b.has_lo || neg_lo <= -b.lo - 1)
            alternatives.push_back("\"-\" " + paren(uint_range(neg_lo, b.has_lo ? -b.lo - 1 : -1)) + fraction);
        return paren(join_alternatives(alternatives));
    }

    std::string visit_object(const Value& schema, const std::string& path, const std::string& name) {
        struct Property {
            std::string key_literal;
            std::string value;
            bool required;
        };
        std::vector<Property> properties;
        std::set<std::string> required;
        if (const Value* r = schema.find("required")) {
            if (!r->is_array()) fail(path, "'required' must be an array of strings");
            for (const Value& key : r->items()) {
                if (!key.is_string()) fail(path, "'required' must be an array of strings");
                required.insert(key.as_string());
            }
        }
        std::set<std::string> declared;
        if (const Value* p = schema.find("properties")) {
            if (!p->is_object()) fail(path, "'properties' must be an object");
            for (const auto& [key, sub] : p->members()) {
                declared.insert(key);
                properties.push_back({gbnf_literal(json::dump(Value(key))),
                                      visit(sub, path + "/properties/" + key, name + "-" + key), required.count(key) > 0});
            }
        }
        for (const std::string& key : required)
            if (!declared.count(key)) properties.push_back({gbnf_literal(json::dump(Value(key))), "json-value", true});

        std::string additional;
        if (const Value* a = schema.find("additionalProperties")) {
            if (!a->is_bool() || a->as_bool())
                additional = "json-string json-ws \":\" json-ws " + visit(*a, path + "/additionalProperties", name + "-additional") + " json-ws";
        }

        // first-i: properties i.. when none is written yet; rest-i: when one is (each preceded by a comma).
        const std::string extra_rest = additional.empty() ? "" : "( \",\" json-ws " + paren(additional) + " )*";
        const std::string extra_first =
            additional.empty() ? "" : "( " + paren(additional) + " ( \",\" json-ws " + paren(additional) + " )* )?";
        std::string rest_next = extra_rest, first_next = extra_first;
        for (size_t i = properties.size(); i-- > 0;) {
            const Property& p = properties[i];
            const std::string kv = p.key_literal + " json-ws \":\" json-ws " + p.value + " json-ws";
            const std::string rest_body = p.required ? "\",\" json-ws " + kv + " " + rest_next
                                                     : "( \",\" json-ws " + kv + " )? " + rest_next;
            const std::string first_body = p.required ? kv + " " + rest_next
                                                      : kv + " " + rest_next + " | " + (first_next.empty() ? "\"\"" : first_next);
            rest_next = add_rule(name + "-rest-" + std::to_string(i), rest_body);
            first_next = add_rule(name + "-first-" + std::to_string(i), first_body);
        }
        return add_rule(name + "-object", "\"{\" json-ws " + first_next + " \"}\"");
    }

    std::string visit_array(const Value& schema, const std::string& path, const std::string& name) {
        std::vector<std::string> prefix;
        if (const Value* p = schema.find("prefixItems")) {
            if (!p->is_array()) fail(path, "'prefixItems' must be an array");
            for (size_t i = 0; i < p->items().size(); ++i)
                prefix.push_back(visit(p->items()[i], path + "/prefixItems/" + std::to_string(i), name + "-" + std::to_string(i)));
        }
        std::string item = "json-value";
        bool items_allowed = true;
        if (const Value* it = schema.find("items")) {
            if (it->is_bool() && !it->as_bool()) {
                items_allowed = false;
            } else {
                item = visit(*it, path + "/items", name + "-item");
            }
        }
        const int64_t min = count(schema, "minItems", path, 0);
        int64_t max = count(schema, "maxItems", path, -1);
        if (max >= 0 && min > max) fail(path, "minItems exceeds maxItems");
        if (max >= 0 && static_cast<int64_t>(prefix.size()) > max) prefix.resize(static_cast<size_t>(max));
        const int64_t p = static_cast<int64_t>(prefix.size());
        if (!items_allowed) {
            if (min > p) fail(path, "minItems exceeds the prefixItems while items is false");
            max = p;
        }

        std::vector<std::string> elements;
        for (const std::string& e : prefix) elements.push_back(e + " json-ws");
        // Further items: between extra_min and extra_max (< 0: unbounded) of them.
        const int64_t extra_min = std::max<int64_t>(0, min - p);
        const int64_t extra_max = max < 0 ? -1 : max - p;
        std::string body;
        for (size_t i = 0; i < elements.size(); ++i) body += (i ? " \",\" json-ws " : "") + elements[i];
        const std::string one = paren(item) + " json-ws";
        if (extra_max != 0) {
            if (p > 0) {
                const std::string bound = extra_max < 0 ? (extra_min == 0 ? "*" : "{" + std::to_string(extra_min) + ",}")
                                                        : "{" + std::to_string(extra_min) + "," + std::to_string(extra_max) + "}";
                body += " ( \",\" json-ws " + one + " )" + bound;
            } else {
                const int64_t more_min = std::max<int64_t>(0, extra_min - 1);
                const std::string bound = extra_max < 0 ? (more_min == 0 ? "*" : "{" + std::to_string(more_min) + ",}")
                                                        : "{" + std::to_string(more_min) + "," + std::to_string(extra_max - 1) + "}";
                body = one + " ( \",\" json-ws " + one + " )" + bound;
                if (extra_min == 0) body = "( " + body + " )?";
            }
        }
        return add_rule(name + "-array", "\"[\" json-ws " + body + " \"]\"");
    }

    const Value& root_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::set<std::string> names_;
    std::map<std::string, std::string> refs_;
    std::map<std::string, std::string> shared_rules_;  // scalar expression -> its rule
    // Keys view the schema's own strings, which outlive the compile.
    mutable std::unordered_map<const Value*, std::unordered_map<std::string_view, const Value*>> member_index_;
    int depth_ = 0;       // visits open (the walk's nesting)
    int64_t visits_ = 0;  // visits in this compile
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json) {
    Value schema;
    try {
        schema = json::parse(schema_json);
    } catch (const Error& e) {
        throw_invalid_argument(std::string("JSON schema: ") + e.what());
    }
    return SchemaCompiler(schema).compile();
}

}  // namespace vllm::structured
