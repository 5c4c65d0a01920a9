#include "chat/chat_constraint.h"

#include "structured/grammar_compiler.h"
#include "structured/json_schema.h"
#include "structured/structured_output.h"
#include "util/error.h"
#include "util/recursion_budget.h"

namespace vllm::chat {

namespace {

// Runs `compile`, putting the request field the schema came from in front of
// the compiler's message ("'tools[1].function.parameters': JSON schema: ...").
template <class Compile>
auto naming_field(const std::string& field, Compile compile) {
    try {
        return compile();
    } catch (const Error& e) {
        throw Error(e.status(), "'" + field + "': " + e.what());
    }
}

json::Value parameters_of(const json::Value& tool) {
    const json::Value* parameters = tool.find("function")->find("parameters");
    if (parameters != nullptr && !parameters->is_null()) return *parameters;
    json::Value empty = json::Value::object();  // a function without parameters takes {}
    empty.set("type", "object");
    return empty;
}

// --- tool_choice "required": every tool's parameters as one schema ----------

// Values that are data, not schemas: a "$ref" key inside them is not a reference.
bool holds_data(const std::string& key) { return key == "const" || key == "enum" || key == "default" || key == "examples"; }

// A tool's parameter schema moves to the root's $defs under `self`, its own
// definitions under `self` + "_" + name; its references follow them.
std::string rebased_ref(const std::string& ref, const std::string& self) {
    if (ref == "#") return "#/$defs/" + self;
    for (const std::string prefix : {"#/$defs/", "#/definitions/"})
        if (ref.compare(0, prefix.size(), prefix) == 0) return "#/$defs/" + self + "_" + ref.substr(prefix.size());
    return ref;  // forms the compiler refuses anyway (checked per tool first)
}

// `depth`: the walk's nesting (parsed JSON is at most json::kMaxDepth deep,
// but the guard also keeps the stack of the thread it runs on).
void rebase_refs(json::Value& schema, const std::string& self, int& depth) {
    static constexpr RecursionLimit kNesting{"a tool's parameters schema", json::kMaxDepth};
    const RecursionGuard guard(kNesting, depth);
    if (schema.is_array()) {
        for (json::Value& item : schema.items()) rebase_refs(item, self, depth);
        return;
    }
    if (!schema.is_object()) return;
    for (auto& [key, value] : schema.members()) {
        if (key == "$ref" && value.is_string()) {
            value = rebased_ref(value.as_string(), self);
        } else if (!holds_data(key)) {
            rebase_refs(value, self, depth);
        }
    }
}

void hoist_definitions(json::Value& parameters, const std::string& self, json::Value& root_defs) {
    for (const char* key : {"$defs", "definitions"}) {
        const json::Value* defs = parameters.find(key);
        if (defs == nullptr || !defs->is_object()) continue;
        for (const auto& [name, def] : defs->members()) root_defs.set(self + "_" + name, def);
        parameters.erase(key);
    }
    root_defs.set(self, std::move(parameters));
}

// {"type": "array", "minItems": 1, "items": {"anyOf": [one call shape per
// tool]}, "$defs": {...}}; a call is {"name": <const>, "parameters": ...}.
std::string required_calls_schema(const json::Value& tools) {
    json::Value defs = json::Value::object();
    json::Value shapes = json::Value::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const json::Value& tool = tools.items()[i];
        json::Value parameters = parameters_of(tool);
        // Checked alone first, so that an error names the tool it is in.
        naming_field("tools[" + std::to_string(i) + "].function.parameters",
                     [&] { return structured::json_schema_to_gbnf(json::dump(parameters)); });
        const std::string self = "tool" + std::to_string(i);
        int depth = 0;
        rebase_refs(parameters, self, depth);
        hoist_definitions(parameters, self, defs);

        json::Value name = json::Value::object();
        name.set("const", tool.find("function")->find("name")->as_string());
        json::Value ref = json::Value::object();
        ref.set("$ref", "#/$defs/" + self);
        json::Value properties = json::Value::object();
        properties.set("name", std::move(name));
        properties.set("parameters", std::move(ref));
        json::Value required = json::Value::array();
        required.push_back("name");
        required.push_back("parameters");
        json::Value shape = json::Value::object();
        shape.set("type", "object");
        shape.set("properties", std::move(properties));
        shape.set("required", std::move(required));
        shapes.push_back(std::move(shape));
    }
    json::Value items = json::Value::object();
    items.set("anyOf", std::move(shapes));
    json::Value schema = json::Value::object();
    schema.set("type", "array");
    schema.set("minItems", 1);
    schema.set("items", std::move(items));
    schema.set("$defs", std::move(defs));
    return json::dump(schema);
}

std::shared_ptr<const structured::Grammar> guided_constraint(const GuidedOutput& guided,
                                                             const structured::GrammarCompiler* compiler) {
    using structured::ConstraintKind;
    return naming_field(guided.field, [&]() -> std::shared_ptr<const structured::Grammar> {
        switch (guided.kind) {
            case GuidedOutput::Kind::JsonSchema: return compile_text(compiler, ConstraintKind::JsonSchema, guided.text);
            case GuidedOutput::Kind::JsonObject: return structured::json_object_grammar();
            case GuidedOutput::Kind::Regex: return compile_text(compiler, ConstraintKind::Regex, guided.text);
            case GuidedOutput::Kind::Choice: return structured::compile_choices(compiler, guided.choices);
            case GuidedOutput::Kind::Grammar: return compile_text(compiler, ConstraintKind::Gbnf, guided.text);
            case GuidedOutput::Kind::None: break;
        }
        return nullptr;
    });
}

}  // namespace

std::shared_ptr<const structured::Grammar> format_constraint(const OpenAIRequest& request,
                                                             const structured::GrammarCompiler* compiler) {
    using structured::ConstraintKind;
    if (request.guided.kind != GuidedOutput::Kind::None) {
        if (request.response_format.type != ResponseFormat::Type::Text)
            throw_invalid_argument("'" + request.guided.field +
                                   "' and 'response_format' both constrain the output; give one of them");
        return guided_constraint(request.guided, compiler);
    }
    switch (request.response_format.type) {
        case ResponseFormat::Type::JsonObject:
            return structured::json_object_grammar();
        case ResponseFormat::Type::JsonSchema:
            if (request.response_format.schema.empty()) return structured::json_object_grammar();
            return naming_field("response_format.json_schema.schema", [&] {
                return compile_text(compiler, ConstraintKind::JsonSchema, request.response_format.schema);
            });
        case ResponseFormat::Type::Text:
            break;
    }
    return nullptr;
}

std::shared_ptr<const structured::Grammar> chat_output_constraint(const ChatRequest& request,
                                                                  const structured::GrammarCompiler* compiler) {
    using structured::ConstraintKind;
    const bool forced_call = request.tool_choice == ToolChoice::Required || request.tool_choice == ToolChoice::Named;
    if (forced_call && request.guided.kind != GuidedOutput::Kind::None)
        throw_invalid_argument("'" + request.guided.field +
                               "' and a forced tool call (tool_choice) both constrain the output; give one of them");
    if (forced_call && request.response_format.type != ResponseFormat::Type::Text)
        throw_invalid_argument("'response_format' and " +
                               (request.tool_choice == ToolChoice::Required
                                    ? std::string("tool_choice 'required'")
                                    : "tool_choice function '" + request.tool_choice_name + "'") +
                               " both constrain the output; give one of them");
    if (!forced_call) return format_constraint(request, compiler);
    if (request.tool_choice == ToolChoice::Named) {
        const int index = tool_index(request.tools, request.tool_choice_name);  // >= 0: parse_chat_request checked it
        const json::Value& tool = request.tools.items()[static_cast<size_t>(index)];
        return naming_field("tools[" + std::to_string(index) + "].function.parameters", [&] {
            return compile_text(compiler, ConstraintKind::JsonSchema, json::dump(parameters_of(tool)));
        });
    }
    return naming_field("tool_choice", [&] {
        return compile_text(compiler, ConstraintKind::JsonSchema, required_calls_schema(request.tools));
    });
}

}  // namespace vllm::chat
