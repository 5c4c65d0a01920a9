// Gemma 3's vision config and tensors under llama.cpp's mmproj names.
#include "formats/hf_vision.h"

#include <cmath>
#include <cstring>
#include <set>

#include "formats/hf_json.h"
#include "kernels/cpu/kernels.h"
#include "util/json.h"

namespace vllm {

namespace {

GgufValue number(double f, bool integer) {
    GgufValue v;
    v.type = integer ? GgufValueType::INT64 : GgufValueType::FLOAT64;
    v.i = static_cast<int64_t>(f);
    v.f = f;
    return v;
}

GgufValue float_array(const std::vector<double>& values) {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.element_type = GgufValueType::FLOAT32;
    for (double d : values) {
        const float f = static_cast<float>(d);
        uint8_t bytes[4];
        std::memcpy(bytes, &f, 4);
        v.packed_scalars.insert(v.packed_scalars.end(), bytes, bytes + 4);
    }
    return v;
}

// The SigLIP tower's and projector's HF names (after "vision_tower.vision_model."
// or "multi_modal_projector.") -> llama.cpp's.
std::string mmproj_name(const std::string& hf) {
    static const std::string tower = "vision_tower.vision_model.", projector = "multi_modal_projector.";
    std::string name = hf;
    if (name.rfind("model.", 0) == 0) name = name.substr(6);  // transformers 5's Gemma3Model prefix
    if (name.rfind("vision_tower.", 0) == 0 && name.rfind(tower, 0) != 0)
        name = tower + name.substr(std::strlen("vision_tower."));  // transformers 5 saves it without vision_model
    if (name.rfind(projector, 0) == 0) {
        const std::string rest = name.substr(projector.size());
        if (rest == "mm_input_projection_weight") return "mm.input_projection.weight";
        if (rest == "mm_soft_emb_norm.weight") return "mm.soft_emb_norm.weight";
        return "";
    }
    if (name.rfind(tower, 0) != 0) return "";
    std::string rest = name.substr(tower.size());
    const std::pair<const char*, const char*> fixed[] = {
        {"embeddings.patch_embedding.", "v.patch_embd."},
        {"embeddings.position_embedding.", "v.position_embd."},
        {"post_layernorm.", "v.post_ln."},
    };
    for (const auto& [from, to] : fixed)
        if (rest.rfind(from, 0) == 0) return to + rest.substr(std::strlen(from));
    const std::string layers = "encoder.layers.";
    if (rest.rfind(layers, 0) != 0) return "";
    rest = rest.substr(layers.size());
    const size_t dot = rest.find('.');
    const std::string block = "v.blk." + rest.substr(0, dot) + ".", part = rest.substr(dot + 1);
    const std::pair<const char*, const char*> per_layer[] = {
        {"self_attn.q_proj.", "attn_q."}, {"self_attn.k_proj.", "attn_k."}, {"self_attn.v_proj.", "attn_v."},
        {"self_attn.out_proj.", "attn_out."}, {"layer_norm1.", "ln1."}, {"layer_norm2.", "ln2."},
        {"mlp.fc1.", "ffn_up."}, {"mlp.fc2.", "ffn_down."},
    };
    for (const auto& [from, to] : per_layer)
        if (part.rfind(from, 0) == 0) return block + to + part.substr(std::strlen(from));
    return "";
}

}  // namespace

std::unique_ptr<HfVisionSource> HfVisionSource::open(const std::string& dir, std::string* unsupported) {
    if (!file_exists(dir + "/config.json")) return nullptr;
    const json::Value config = read_json_file(dir + "/config.json");
    const json::Value* vision = config.is_object() ? config.find("vision_config") : nullptr;
    if (vision == nullptr || !vision->is_object()) return nullptr;
    std::unique_ptr<HfVisionSource> s(new HfVisionSource(dir));
    const json::Value* archs = config.find("architectures");
    const std::string arch = archs && archs->is_array() && !archs->items().empty() && archs->items()[0].is_string()
                                 ? archs->items()[0].as_string() : "";
    if (arch != "Gemma3ForConditionalGeneration") {
        *unsupported = arch;
        return nullptr;
    }
    auto get = [&](const json::Value& o, const char* key, double fallback) {
        const json::Value* v = o.find(key);
        if (v == nullptr || v->is_null()) return fallback;
        if (v->is_number()) return v->as_double();
        s->fail(std::string("config.json '") + key + "' is not a number");
    };
    const json::Value* text = config.find("text_config");
    const double image_size = get(*vision, "image_size", 224), patch = get(*vision, "patch_size", 14);
    const double tokens = get(config, "mm_tokens_per_image", 256);
    const double per_side = std::round(std::sqrt(tokens));
    if (patch <= 0 || per_side <= 0 || per_side * per_side != tokens)
        s->fail("config.json 'mm_tokens_per_image' is not a square");
    s->metadata_["clip.projector_type"] = GgufValue{};
    s->metadata_["clip.projector_type"].type = GgufValueType::STRING;
    s->metadata_["clip.projector_type"].s = "gemma3";
    s->metadata_["clip.vision.image_size"] = number(image_size, true);
    s->metadata_["clip.vision.patch_size"] = number(patch, true);
    s->metadata_["clip.vision.embedding_length"] = number(get(*vision, "hidden_size", 768), true);
    s->metadata_["clip.vision.feed_forward_length"] = number(get(*vision, "intermediate_size", 3072), true);
    s->metadata_["clip.vision.block_count"] = number(get(*vision, "num_hidden_layers", 12), true);
    s->metadata_["clip.vision.attention.head_count"] = number(get(*vision, "num_attention_heads", 12), true);
    s->metadata_["clip.vision.attention.layer_norm_epsilon"] = number(get(*vision, "layer_norm_eps", 1e-6), false);
    if (text != nullptr && text->is_object())
        s->metadata_["clip.vision.projection_dim"] = number(get(*text, "hidden_size", 0), true);
    s->metadata_["clip.vision.projector.scale_factor"] =
        number(std::floor(std::floor(image_size / patch) / per_side), true);
    std::vector<double> mean = {0.5, 0.5, 0.5}, stdev = {0.5, 0.5, 0.5};
    if (file_exists(dir + "/preprocessor_config.json")) {
        const json::Value pre = read_json_file(dir + "/preprocessor_config.json");
        auto triple = [&](const char* key, std::vector<double>& out) {
            const json::Value* v = pre.is_object() ? pre.find(key) : nullptr;
            if (v == nullptr || !v->is_array() || v->items().size() != 3) return;
            for (size_t c = 0; c < 3; ++c)
                out[c] = v->items()[c].is_int() ? double(v->items()[c].as_int()) : v->items()[c].as_double();
        };
        triple("image_mean", mean);
        triple("image_std", stdev);
        if (const json::Value* pan = pre.is_object() ? pre.find("do_pan_and_scan") : nullptr;
            pan != nullptr && pan->is_bool() && pan->as_bool())
            s->fail("preprocessor_config.json 'do_pan_and_scan': pan-and-scan crops are not supported");
    }
    s->metadata_["clip.vision.image_mean"] = float_array(mean);
    s->metadata_["clip.vision.image_std"] = float_array(stdev);

    // The shards holding the tensors.
    std::set<std::string> files;
    if (file_exists(dir + "/model.safetensors.index.json")) {
        const json::Value index = read_json_file(dir + "/model.safetensors.index.json");
        const json::Value* map = index.is_object() ? index.find("weight_map") : nullptr;
        if (map == nullptr || !map->is_object()) s->fail("model.safetensors.index.json has no 'weight_map' object");
        for (const auto& [name, file] : map->members())
            if (file.is_string() && !mmproj_name(name).empty()) files.insert(file.as_string());
    } else {
        files.insert("model.safetensors");
    }
    for (const std::string& file : files) {
        if (file.find('/') != std::string::npos) s->fail("shard name '" + file + "' is not a file of the directory");
        s->shards_.push_back(std::make_unique<SafetensorsFile>(dir + "/" + file));
        for (const SafetensorsTensor& t : s->shards_.back()->tensors()) {
            const std::string name = mmproj_name(t.name);
            if (name.empty() || s->find_tensor(name) != nullptr) continue;
            GgufTensor g;
            g.name = name;
            g.dims.assign(t.shape.rbegin(), t.shape.rend());
            g.type = static_cast<uint32_t>(t.type);
            g.data = t.data;
            g.nbytes = t.nbytes;
            if (name == "mm.soft_emb_norm.weight") {  // Gemma3RMSNorm's 1 + w, computed once
                std::vector<float>& w = s->computed_.emplace_back(static_cast<size_t>(g.elements()));
                kernels::dequantize_row(t.type, t.data, w.data(), g.elements());
                for (float& x : w) x += 1.0f;
                g.type = static_cast<uint32_t>(GgmlType::F32);
                g.data = reinterpret_cast<const uint8_t*>(w.data());
                g.nbytes = w.size() * sizeof(float);
            }
            s->add_tensor(std::move(g));
        }
    }
    return s;
}

}  // namespace vllm
