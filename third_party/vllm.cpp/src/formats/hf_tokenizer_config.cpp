#include "formats/hf_tokenizer_config.h"

#include "formats/hf_json.h"
#include "util/json.h"

namespace vllm {

namespace {

// A token given as its text or as a serialized AddedToken ({"content": ...}).
std::string token_text(const json::Value& doc, const char* key, const std::string& path) {
    const json::Value* v = doc.find(key);
    if (v == nullptr || v->is_null()) return "";
    if (v->is_string()) return v->as_string();
    if (v->is_object()) {
        const json::Value* content = v->find("content");
        if (content != nullptr && content->is_string()) return content->as_string();
    }
    fail_file(path, std::string("'") + key + "' is neither a token string nor an object with a 'content' string");
}

std::optional<bool> flag(const json::Value& doc, const char* key, const std::string& path) {
    const json::Value* v = doc.find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_bool()) fail_file(path, std::string("'") + key + "' is not a boolean");
    return v->as_bool();
}

// chat_template is one template, or a list of {name, template} of which
// transformers uses "default" unless told otherwise.
std::string read_chat_template(const json::Value& doc, const std::string& path) {
    const json::Value* v = doc.find("chat_template");
    if (v == nullptr || v->is_null()) return "";
    if (v->is_string()) return v->as_string();
    if (v->is_array()) {
        for (const json::Value& entry : v->items()) {
            const json::Value* name = entry.is_object() ? entry.find("name") : nullptr;
            const json::Value* text = entry.is_object() ? entry.find("template") : nullptr;
            if (name == nullptr || !name->is_string() || text == nullptr || !text->is_string())
                fail_file(path, "'chat_template' list entries must be {\"name\": string, \"template\": string}");
            if (name->as_string() == "default") return text->as_string();
        }
        fail_file(path, "'chat_template' list has no template named 'default'");
    }
    fail_file(path, "'chat_template' is neither a string nor a list of named templates");
}

}  // namespace

HfTokenizerConfig HfTokenizerConfig::load(const std::string& dir, const std::string& override_path) {
    HfTokenizerConfig out;
    const std::string config_path = override_path.empty() ? dir + "/tokenizer_config.json" : override_path;
    if (!override_path.empty() && !file_exists(override_path))
        fail_file(override_path, "the tokenizer_config_path file does not exist");
    if (file_exists(config_path)) {
        const json::Value doc = read_json_file(config_path);
        if (!doc.is_object()) fail_file(config_path, "not a JSON object");
        out.chat_template = read_chat_template(doc, config_path);
        out.bos_token = token_text(doc, "bos_token", config_path);
        out.eos_token = token_text(doc, "eos_token", config_path);
        out.add_bos_token = flag(doc, "add_bos_token", config_path);
        out.add_eos_token = flag(doc, "add_eos_token", config_path);
    }
    const std::string jinja_path = dir + "/chat_template.jinja";
    if ((override_path.empty() || out.chat_template.empty()) && file_exists(jinja_path))
        out.chat_template = read_text_file(jinja_path);

    const std::string generation_path = dir + "/generation_config.json";
    if (file_exists(generation_path)) {
        const json::Value doc = read_json_file(generation_path);
        const json::Value* eos = doc.is_object() ? doc.find("eos_token_id") : nullptr;
        if (eos != nullptr && eos->is_int()) out.eos_token_ids.push_back(static_cast<int32_t>(eos->as_int()));
        else if (eos != nullptr && eos->is_array())
            for (const json::Value& id : eos->items()) {
                if (!id.is_int()) fail_file(generation_path, "'eos_token_id' list holds something that is not a token id");
                out.eos_token_ids.push_back(static_cast<int32_t>(id.as_int()));
            }
        else if (eos != nullptr && !eos->is_null())
            fail_file(generation_path, "'eos_token_id' is neither a token id nor a list of them");
    }
    return out;
}

}  // namespace vllm
