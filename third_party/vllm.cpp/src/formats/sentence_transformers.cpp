#include "formats/sentence_transformers.h"

#include "formats/hf_json.h"
#include "util/json.h"

namespace vllm {

namespace {

bool flag(const json::Value& config, const char* key) {
    const json::Value* v = config.find(key);
    return v != nullptr && v->is_bool() && v->as_bool();
}

int pooling_type_of(const json::Value& config, const std::string& path) {
    if (flag(config, "pooling_mode_cls_token")) return 2;
    if (flag(config, "pooling_mode_mean_tokens")) return 1;
    if (flag(config, "pooling_mode_lasttoken")) return 3;
    if (const json::Value* mode = config.find("pooling_mode"); mode != nullptr && mode->is_string()) {
        if (mode->as_string() == "cls") return 2;
        if (mode->as_string() == "mean") return 1;
        if (mode->as_string() == "lasttoken") return 3;
        fail_file(path, "pooling_mode '" + mode->as_string() + "' is not supported (cls, mean, lasttoken)");
    }
    fail_file(path, "names no supported pooling mode (pooling_mode_cls_token, pooling_mode_mean_tokens or "
                    "pooling_mode_lasttoken; max, mean_sqrt_len and weightedmean are not supported)");
}

// A Dense module's folder, after checking it is the linear map the engine
// applies: no bias, no activation (torch.nn.Identity), its weights in
// model.safetensors.
std::string dense_dir(const std::string& dir, const json::Value& module, const std::string& modules_path) {
    const json::Value* sub = module.find("path");
    if (sub == nullptr || !sub->is_string()) fail_file(modules_path, "a Dense module has no \"path\" string");
    const std::string folder = dir + "/" + sub->as_string();
    const std::string config_path = folder + "/config.json";
    const json::Value config = read_json_file(config_path);
    if (flag(config, "bias")) fail_file(config_path, "bias true is not supported (Dense modules without bias only)");
    const json::Value* activation = config.find("activation_function");
    if (activation == nullptr || !activation->is_string() || activation->as_string() != "torch.nn.modules.linear.Identity")
        fail_file(config_path, "activation_function " + (activation == nullptr ? std::string("(the default Tanh)")
                                                                               : json::dump(*activation)) +
                                   " is not supported (torch.nn.modules.linear.Identity only)");
    if (!file_exists(folder + "/model.safetensors"))
        fail_file(folder, "has no model.safetensors (the Dense weights; pytorch_model.bin is not read)");
    return folder;
}

}  // namespace

std::optional<SentenceTransformersPooling> read_sentence_transformers(const std::string& dir) {
    const std::string modules_path = dir + "/modules.json";
    if (!file_exists(modules_path)) return std::nullopt;
    const json::Value modules = read_json_file(modules_path);
    if (!modules.is_array()) fail_file(modules_path, "is not a JSON list of modules");
    SentenceTransformersPooling out;
    bool pooled = false;
    for (const json::Value& module : modules.items()) {
        const json::Value* type = module.is_object() ? module.find("type") : nullptr;
        if (type == nullptr || !type->is_string()) fail_file(modules_path, "a module has no \"type\" string");
        const std::string& name = type->as_string();
        const std::string tail = name.substr(name.find_last_of('.') + 1);
        if (tail == "Transformer") continue;
        if (tail == "Pooling") {
            const json::Value* sub = module.find("path");
            const std::string config_path =
                dir + "/" + (sub != nullptr && sub->is_string() ? sub->as_string() : "1_Pooling") + "/config.json";
            out.pooling_type = pooling_type_of(read_json_file(config_path), config_path);
            pooled = true;
        } else if (tail == "Dense" && pooled && !out.normalize) {
            out.dense_dirs.push_back(dense_dir(dir, module, modules_path));
        } else if (tail == "Normalize") {
            out.normalize = true;
        } else {
            fail_file(modules_path, "module " + name + " is not supported (Transformer, Pooling and Normalize are)");
        }
    }
    if (!pooled) return std::nullopt;
    return out;
}

}  // namespace vllm
