#include "chat/openai_request.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "sample/sampling_fields.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace vllm::chat {

namespace {

ResponseFormat parse_response_format(const json::Value& body) {
    ResponseFormat out;
    const json::Value* format = json::field(body, "response_format");
    if (format == nullptr) return out;
    json::require_object(*format, "response_format");
    const std::string& type = json::required_string(*format, "type", "response_format");
    if (type == "text") return out;
    if (type == "json_object") {
        out.type = ResponseFormat::Type::JsonObject;
        return out;
    }
    if (type != "json_schema")
        throw_invalid_argument("'response_format.type' must be 'text', 'json_object' or 'json_schema' (got '" + type +
                               "')");
    out.type = ResponseFormat::Type::JsonSchema;
    const json::Value* spec = json::field(*format, "json_schema");
    if (spec == nullptr) throw_invalid_argument("'response_format.json_schema' is required");
    json::require_object(*spec, "response_format.json_schema");
    if (const json::Value* name = json::field(*spec, "name"))
        json::read_string(*name, "response_format.json_schema.name");
    if (const json::Value* schema = json::field(*spec, "schema")) {
        if (!schema->is_object() && !schema->is_bool())
            json::wrong_type("response_format.json_schema.schema", "an object", *schema);
        out.schema = json::dump(*schema);
    }
    return out;
}

// One guided output's value: a schema (an object or its JSON text), a
// regex or grammar (a string), choices (a non-empty array of strings), or
// json_object (true).
void read_guided(const json::Value& v, GuidedOutput::Kind kind, const std::string& name, GuidedOutput& out) {
    out.kind = kind;
    out.field = name;
    switch (kind) {
        case GuidedOutput::Kind::JsonSchema:
            if (v.is_string()) out.text = v.as_string();
            else if (v.is_object() || v.is_bool()) out.text = json::dump(v);
            else json::wrong_type(name, "a JSON schema (an object or its JSON text)", v);
            break;
        case GuidedOutput::Kind::Choice:
            json::require_array(v, name);
            if (v.items().empty()) throw_invalid_argument("'" + name + "' must not be empty");
            for (size_t i = 0; i < v.items().size(); ++i)
                out.choices.push_back(json::read_string(v.items()[i], name + "[" + std::to_string(i) + "]"));
            break;
        case GuidedOutput::Kind::JsonObject:  // true (false is no constraint: parse_guided skips it)
            break;
        default:
            out.text = json::read_string(v, name);
    }
}

GuidedOutput parse_guided(const json::Value& body) {
    using Kind = GuidedOutput::Kind;
    GuidedOutput out;
    int given = 0;
    const std::pair<const char*, Kind> guided[] = {{"guided_json", Kind::JsonSchema}, {"guided_regex", Kind::Regex},
                                                   {"guided_choice", Kind::Choice}, {"guided_grammar", Kind::Grammar}};
    for (const auto& [key, kind] : guided)
        if (const json::Value* v = json::field(body, key)) {
            read_guided(*v, kind, key, out);
            ++given;
        }
    if (const json::Value* outputs = json::field(body, "structured_outputs")) {
        json::require_object(*outputs, "structured_outputs");
        const std::pair<const char*, Kind> keys[] = {{"json", Kind::JsonSchema}, {"regex", Kind::Regex},
                                                     {"choice", Kind::Choice},   {"grammar", Kind::Grammar},
                                                     {"json_object", Kind::JsonObject}};
        for (const auto& member : outputs->members())
            if (std::none_of(std::begin(keys), std::end(keys), [&](const auto& k) { return member.first == k.first; }))
                throw_invalid_argument("'structured_outputs." + member.first +
                                       "' is not supported (known: json, regex, choice, grammar, json_object)");
        for (const auto& [key, kind] : keys) {
            const json::Value* v = json::field(*outputs, key);
            const std::string name = std::string("structured_outputs.") + key;
            if (v == nullptr || (kind == Kind::JsonObject && !json::read_bool(*v, name))) continue;
            read_guided(*v, kind, name, out);
            ++given;
        }
    }
    if (given > 1)
        throw_invalid_argument("at most one structured-output constraint may be given (guided_json, guided_regex, "
                               "guided_choice, guided_grammar, or one key of structured_outputs)");
    return out;
}

}  // namespace

void parse_openai_fields(const json::Value& body, OpenAIRequest& r) {
    using json::field;
    using json::read_bool;
    if (const json::Value* v = field(body, "model")) r.model = json::read_string(*v, "model");
    read_sampling_fields(body, r.sampling);
    if (const json::Value* v = field(body, "n")) r.n = json::read_int32_in(*v, "n", 1, kMaxChoices, "between 1 and 128");
    if (const json::Value* v = field(body, "priority"))
        r.priority = json::read_int32_in(*v, "priority", std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max(), "a 32-bit integer");
    if (const json::Value* v = field(body, "stream")) r.stream = read_bool(*v, "stream");
    if (const json::Value* v = field(body, "return_token_ids"))
        r.return_token_ids = read_bool(*v, "return_token_ids");
    if (const json::Value* v = field(body, "return_tokens_as_token_ids"))
        r.return_tokens_as_token_ids = read_bool(*v, "return_tokens_as_token_ids");
    if (const json::Value* options = field(body, "stream_options")) {
        json::require_object(*options, "stream_options");
        if (const json::Value* v = field(*options, "include_usage"))
            r.include_usage = read_bool(*v, "stream_options.include_usage");
    }
    r.response_format = parse_response_format(body);
    r.guided = parse_guided(body);
}

}  // namespace vllm::chat
