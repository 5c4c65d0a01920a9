#include "formats/hf_model.h"

#include <cmath>
#include <set>

#include "formats/hf_architecture.h"
#include "formats/hf_json.h"
#include "kernels/cpu/kernels.h"
#include "util/json.h"

namespace vllm {

namespace {

GgufValue string_value(std::string s) {
    GgufValue v;
    v.type = GgufValueType::STRING;
    v.s = std::move(s);
    return v;
}

GgufValue int_value(int64_t i) {
    GgufValue v;
    v.type = GgufValueType::INT64;
    v.i = i;
    return v;
}

GgufValue float_value(double f) {
    GgufValue v;
    v.type = GgufValueType::FLOAT64;
    v.f = f;
    return v;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

constexpr double kPi = 3.14159265358979323846;

// Llama 3.1+ ("rope_type": "llama3"): per-frequency divisors that stretch the
// low frequencies by `factor` and keep the high ones, blending in between —
// what llama.cpp's converter writes as rope_freqs.weight.
std::vector<float> llama3_rope_factors(double theta, int rope_dim, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context) {
    const double low_freq_wavelen = original_context / low_freq_factor;
    const double high_freq_wavelen = original_context / high_freq_factor;
    std::vector<float> out;
    for (int i = 0; i < rope_dim; i += 2) {
        const double freq = 1.0 / std::pow(theta, static_cast<double>(i) / rope_dim);
        const double wavelen = 2.0 * kPi / freq;
        if (wavelen < high_freq_wavelen) {
            out.push_back(1.0f);
        } else if (wavelen > low_freq_wavelen) {
            out.push_back(static_cast<float>(factor));
        } else {
            const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
            out.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth)));
        }
    }
    return out;
}

}  // namespace

HfModel::HfModel(const std::string& dir) : ModelSource(dir, "Hugging Face model directory") {
    const std::string config_path = dir + "/config.json";
    if (!file_exists(config_path)) fail("config.json is missing");
    const json::Value config = read_json_file(config_path);
    if (!config.is_object()) fail("config.json is not a JSON object");
    const json::Value* classes = config.find("architectures");
    if (classes == nullptr || !classes->is_array() || classes->size() == 0 || !classes->items()[0].is_string())
        fail("config.json has no \"architectures\" list naming the model class");
    const std::string& hf_class = classes->items()[0].as_string();
    const HfArchitecture* arch = find_hf_architecture(hf_class);
    if (arch == nullptr)
        fail("config.json architectures '" + hf_class + "' is not supported (supported: " + supported_hf_architectures() + ")");
    const json::Value* text = arch->text_config ? config.find("text_config") : nullptr;
    if (arch->text_config && (text == nullptr || !text->is_object()))
        fail("config.json has no 'text_config' object (" + hf_class + " keeps the text model's settings there)");
    read_config(text != nullptr ? *text : config, *arch);

    bool tied = arch->tie_default;
    if (const json::Value* tie = config.find("tie_word_embeddings"); tie != nullptr && !tie->is_null()) {
        if (!tie->is_bool()) fail("config.json 'tie_word_embeddings' is not a boolean");
        tied = tie->as_bool();
    }
    open_shards();
    add_tensors(*arch, tied);
}

void HfModel::read_config(const json::Value& config, const HfArchitecture& arch) {
    const std::string a = std::string(arch.gguf_name) + ".";
    metadata_["general.architecture"] = string_value(arch.gguf_name);
    metadata_["general.name"] = string_value(base_name(path()));
    if (!arch.rope_layout_as_gguf) metadata_["vllm.rope_style"] = string_value("halves");
    for (const HfConfigKey& key : arch.config) {
        const json::Value* v = config.find(key.hf_key);
        if (v == nullptr || v->is_null()) continue;
        if (key.kind == HfConfigKey::Kind::INT) {
            if (!v->is_int()) fail(std::string("config.json '") + key.hf_key + "' is not an integer");
            metadata_[a + key.gguf_suffix] = int_value(v->as_int());
        } else if (key.kind == HfConfigKey::Kind::BOOL) {
            if (!v->is_bool()) fail(std::string("config.json '") + key.hf_key + "' is not a boolean");
            GgufValue b = int_value(v->as_bool() ? 1 : 0);
            b.type = GgufValueType::BOOL;
            metadata_[a + key.gguf_suffix] = b;
        } else {
            if (!v->is_number()) fail(std::string("config.json '") + key.hf_key + "' is not a number");
            metadata_[a + key.gguf_suffix] = float_value(v->as_double());
        }
    }
    for (const auto& [key, accepted] : arch.refused_unless) {
        const json::Value* v = config.find(key);
        if (v == nullptr || v->is_null()) continue;
        const std::string value = json::dump(*v);
        const bool unset = value == "0" || value == "false" || value == "[]";
        if (*accepted ? value != accepted : !unset)
            fail(std::string("config.json '") + key + "' is " + value + ", which is not supported (only " +
                 (*accepted ? accepted : "unset") + ")");
    }
    if (arch.interleaved_experts) check_gpt_oss_config(config);
    if (arch.gated_delta_net) read_gated_delta_net_config(config, a);
    // One head size for keys and values, as HF's head_dim means.
    if (const GgufValue* head_dim = find(a + "attention.key_length")) metadata_[a + "attention.value_length"] = *head_dim;
    read_rope(config, a, arch.partial_rotary_default);
    if (arch.no_rope_layers) read_no_rope_layers(config, a);
    // Gemma 2/3 scale attention scores by query_pre_attn_scalar^-0.5, which
    // is not always head_dim^-0.5 (Gemma 2 27B: dim / n_heads).
    if (const json::Value* scalar = config.find("query_pre_attn_scalar"); scalar != nullptr && !scalar->is_null()) {
        if (!scalar->is_number() || !(scalar->as_double() > 0.0))
            fail("config.json 'query_pre_attn_scalar' is not a positive number");
        metadata_[a + "attention.scale"] = float_value(1.0 / std::sqrt(scalar->as_double()));
    }
}

const json::Value* HfModel::member_object(const json::Value& parent, const std::string& key,
                                          const std::string& where) const {
    const json::Value* v = parent.find(key);
    if (v == nullptr || v->is_null()) return nullptr;
    if (!v->is_object()) fail("config.json " + where + "'" + key + "' is not an object");
    return v;
}

void HfModel::read_no_rope_layers(const json::Value& config, const std::string& a) {
    const json::Value* layers = config.find("no_rope_layers");
    if (layers == nullptr || layers->is_null()) return;  // the architecture's step (SmolLM3: every 4th)
    const int64_t n_layers = get_int(a + "block_count", 0);
    if (!layers->is_array() || static_cast<int64_t>(layers->size()) != n_layers)
        fail("config.json 'no_rope_layers' is not a list of " + std::to_string(n_layers) + " flags (num_hidden_layers)");
    std::vector<bool> rotates;
    for (const json::Value& flag : layers->items()) {
        if (!flag.is_int() || (flag.as_int() != 0 && flag.as_int() != 1))
            fail("config.json 'no_rope_layers' has an entry that is not 0 or 1");
        rotates.push_back(flag.as_int() == 1);
    }
    // The step is the first layer without RoPE; every step-th layer, and
    // only those, must be without (what llama.cpp and this engine run).
    int64_t step = 0;
    while (step < n_layers && rotates[step]) ++step;
    ++step;
    for (int64_t l = 0; l < n_layers; ++l)
        if (rotates[l] != ((l + 1) % step != 0))
            fail("config.json 'no_rope_layers' " + json::dump(*layers) + " is not supported (only every n-th layer "
                 "without RoPE: layer " + std::to_string(l) + " breaks the pattern)");
    metadata_["vllm.no_rope_layer_step"] = int_value(step > n_layers ? 0 : step);
}

void HfModel::read_rope(const json::Value& config, const std::string& a, double partial_rotary_default) {
    const json::Value* scaling = member_object(config, "rope_scaling", "");
    const json::Value* parameters = member_object(config, "rope_parameters", "");
    const json::Value* global = parameters;
    if (parameters != nullptr && parameters->find("full_attention") != nullptr) {
        global = member_object(*parameters, "full_attention", "rope_parameters ");
        if (const json::Value* sliding = member_object(*parameters, "sliding_attention", "rope_parameters "))
            read_sliding_rope(*sliding, a);
    }
    if (global != nullptr) {
        if (const json::Value* theta = global->find("rope_theta"); theta != nullptr && !theta->is_null()) {
            if (!theta->is_number()) fail("config.json rope_parameters 'rope_theta' is not a number");
            metadata_[a + "rope.freq_base"] = float_value(theta->as_double());
        }
        // An older rope_scaling, where a file has both, is what transformers
        // reads; a rope_parameters without a type is unscaled.
        if (scaling == nullptr && (global->find("rope_type") != nullptr || global->find("type") != nullptr))
            scaling = global;
    }
    const json::Value* partial = config.find("partial_rotary_factor");
    if ((partial == nullptr || partial->is_null()) && global != nullptr) partial = global->find("partial_rotary_factor");
    if (partial != nullptr && !partial->is_null()) {
        if (!partial->is_number() || !(partial->as_double() > 0.0 && partial->as_double() <= 1.0))
            fail("config.json 'partial_rotary_factor' is not a number in (0, 1]");
        metadata_[a + "rope.dimension_count"] = int_value(static_cast<int64_t>(head_size(a) * partial->as_double()));
    } else if (partial_rotary_default != 1.0) {
        metadata_[a + "rope.dimension_count"] = int_value(static_cast<int64_t>(head_size(a) * partial_rotary_default));
    }
    // Phi-3 keeps its pre-extension context next to rope_scaling; transformers
    // takes it over rope_scaling's own.
    if (const json::Value* original = config.find("original_max_position_embeddings");
        original != nullptr && !original->is_null()) {
        if (!original->is_int() || original->as_int() <= 0)
            fail("config.json 'original_max_position_embeddings' is not a positive integer");
        metadata_[a + "rope.scaling.original_context_length"] = int_value(original->as_int());
    }
    if (scaling != nullptr) read_rope_scaling(*scaling, a);
}

void HfModel::read_sliding_rope(const json::Value& sliding, const std::string& a) {
    const json::Value* kind = sliding.find("rope_type");
    if (kind != nullptr && !kind->is_null() && !(kind->is_string() && kind->as_string() == "default"))
        fail("config.json rope_parameters 'sliding_attention' has a RoPE scaling, which is not supported (its layers "
             "rotate unscaled)");
    if (const json::Value* theta = sliding.find("rope_theta"); theta != nullptr && !theta->is_null()) {
        if (!theta->is_number()) fail("config.json rope_parameters 'sliding_attention' 'rope_theta' is not a number");
        metadata_[a + "rope.freq_base_swa"] = float_value(theta->as_double());
    }
}

int64_t HfModel::head_size(const std::string& a) const {
    const int64_t heads = get_int(a + "attention.head_count", 0);
    return get_int(a + "attention.key_length", heads > 0 ? get_int(a + "embedding_length", 0) / heads : 0);
}

void HfModel::read_rope_scaling(const json::Value& scaling, const std::string& a) {
    const auto number = [&](const char* key, double fallback) {
        const json::Value* v = scaling.find(key);
        if (v == nullptr || v->is_null()) return fallback;
        if (!v->is_number()) fail(std::string("config.json rope_scaling '") + key + "' is not a number");
        return v->as_double();
    };
    const auto factors = [&](const char* key) {
        const json::Value* v = scaling.find(key);
        if (v == nullptr || !v->is_array()) fail(std::string("config.json rope_scaling '") + key + "' is not a list of numbers");
        std::vector<float> out;
        for (const json::Value& f : v->items()) {
            if (!f.is_number()) fail(std::string("config.json rope_scaling '") + key + "' is not a list of numbers");
            out.push_back(static_cast<float>(f.as_double()));
        }
        return out;
    };
    // transformers names the kind "rope_type" (older configs: "type").
    const json::Value* kind = scaling.find("rope_type");
    if (kind == nullptr) kind = scaling.find("type");
    if (kind == nullptr || !kind->is_string()) fail("config.json rope_scaling has no 'rope_type' string");
    const std::string type = kind->as_string();
    const std::string original_key = a + "rope.scaling.original_context_length";
    if (const double in_scaling = number("original_max_position_embeddings", 0.0); in_scaling > 0.0 && find(original_key) == nullptr)
        metadata_[original_key] = int_value(static_cast<int64_t>(in_scaling));
    const double original = static_cast<double>(get_int(original_key, 0));
    if (type == "default") return;
    if (type == "llama3") {
        // llama.cpp's form: no scaling type, a rope_freqs tensor instead.
        const int rope_dim = static_cast<int>(get_int(a + "rope.dimension_count", head_size(a)));
        if (rope_dim <= 0) fail("config.json has no head size for the llama3 RoPE factors");
        add_computed("rope_freqs.weight", {rope_dim / 2},
                     llama3_rope_factors(get_float(a + "rope.freq_base", 10000.0), rope_dim, number("factor", 8.0),
                                         number("low_freq_factor", 1.0), number("high_freq_factor", 4.0),
                                         original > 0.0 ? original : 8192.0));
        return;
    }
    // transformers' Phi-3 reads the older names "su" and "yarn" as LongRoPE.
    if (type == "longrope" || type == "su" || (type == "yarn" && a == "phi3.")) {
        // llama.cpp's form: no scaling type; the factor tensors, the original
        // context (transformers' default: max_position_embeddings) and the
        // attention factor, computed as transformers does.
        const double context = static_cast<double>(get_int(a + "context_length", 0));
        const double orig = original > 0.0 ? original : context;
        if (!(orig > 0.0)) fail("config.json has no original_max_position_embeddings for the LongRoPE scaling");
        metadata_[original_key] = int_value(static_cast<int64_t>(orig));
        const double factor = number("factor", context / orig);
        metadata_[a + "rope.scaling.attn_factor"] = float_value(
            number("attention_factor", factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(orig))));
        std::vector<float> long_factors = factors("long_factor"), short_factors = factors("short_factor");
        const int64_t n_long = static_cast<int64_t>(long_factors.size()), n_short = static_cast<int64_t>(short_factors.size());
        add_computed("rope_factors_long.weight", {n_long}, std::move(long_factors));
        add_computed("rope_factors_short.weight", {n_short}, std::move(short_factors));
        return;
    }
    metadata_[a + "rope.scaling.type"] = string_value(type);
    metadata_[a + "rope.scaling.factor"] = float_value(number("factor", 1.0));
    if (type == "yarn") {
        metadata_[a + "rope.scaling.yarn_beta_fast"] = float_value(number("beta_fast", 32.0));
        metadata_[a + "rope.scaling.yarn_beta_slow"] = float_value(number("beta_slow", 1.0));
        for (const char* key : {"mscale", "mscale_all_dim"})
            if (number(key, 0.0) != 0.0)
                fail(std::string("config.json rope_scaling '") + key + "' (DeepSeek's YaRN attention factor) is not supported");
        if (const json::Value* truncate = scaling.find("truncate"); truncate != nullptr && !truncate->is_null()) {
            if (!truncate->is_bool()) fail("config.json rope_scaling 'truncate' is not a boolean");
            // false: the correction range's ends are not rounded (gpt-oss).
            GgufValue flag = int_value(truncate->as_bool() ? 1 : 0);
            flag.type = GgufValueType::BOOL;
            metadata_["vllm.yarn_truncate"] = flag;
        }
        // transformers' attention factor replaces YaRN's 1 + 0.1 ln(factor),
        // which the model multiplies attn_factor by (model/model_config.cpp).
        if (const json::Value* attention = scaling.find("attention_factor"); attention != nullptr && !attention->is_null()) {
            const double factor = number("factor", 1.0);
            if (!attention->is_number() || !(attention->as_double() > 0.0) || !(factor > 1.0))
                fail("config.json rope_scaling 'attention_factor' needs a positive value and a 'factor' above 1");
            metadata_[a + "rope.scaling.attn_factor"] = float_value(attention->as_double() / (1.0 + 0.1 * std::log(factor)));
        }
    }
}

void HfModel::open_shards() {
    const std::string index_path = path() + "/model.safetensors.index.json";
    if (!file_exists(index_path)) {
        if (!file_exists(path() + "/model.safetensors"))
            fail("neither model.safetensors nor model.safetensors.index.json is present");
        shards_.push_back(std::make_unique<SafetensorsFile>(path() + "/model.safetensors"));
        return;
    }
    const json::Value index = read_json_file(index_path);
    const json::Value* weight_map = index.is_object() ? index.find("weight_map") : nullptr;
    if (weight_map == nullptr || !weight_map->is_object())
        fail("model.safetensors.index.json has no 'weight_map' object");
    std::set<std::string> opened;
    for (const json::Value::Member& entry : weight_map->members()) {
        if (!entry.second.is_string())
            fail("model.safetensors.index.json maps tensor '" + entry.first + "' to something that is not a file name");
        const std::string& shard = entry.second.as_string();
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "..")
            fail("model.safetensors.index.json names shard '" + shard + "', which is not a file in the directory");
        if (!opened.insert(shard).second) continue;
        if (!file_exists(path() + "/" + shard))
            fail("model.safetensors.index.json names shard '" + shard + "', which is missing");
        shards_.push_back(std::make_unique<SafetensorsFile>(path() + "/" + shard));
    }
    if (shards_.empty()) fail("model.safetensors.index.json names no shards");
}

void HfModel::add_tensors(const HfArchitecture& arch, bool tied) {
    for (const std::unique_ptr<SafetensorsFile>& shard : shards_) {
        for (const SafetensorsTensor& t : shard->tensors()) {
            // A buffer older transformers versions saved; RoPE comes from rope_theta.
            if (ends_with(t.name, "rotary_emb.inv_freq") || ignored_tensor(arch, t.name)) continue;
            // Tied: the embedding is the output matrix, as in a GGUF without output.weight.
            const std::string name = gguf_tensor_name(arch, t.name);
            if (tied && name == "output.weight") continue;
            if (name.empty())
                fail("tensor '" + t.name + "' in " + base_name(shard->path()) + " is not part of a " + arch.hf_class +
                     " checkpoint");
            if (find_tensor(name) != nullptr) fail("tensor '" + t.name + "' appears in more than one shard");
            if (arch.interleaved_experts && add_interleaved_experts(t, name)) continue;
            std::vector<int64_t> dims(t.shape.rbegin(), t.shape.rend());  // GGUF lists the contiguous dim first
            // Qwen3.5: ssm_a = -exp(A_log), as llama.cpp's converter stores it.
            if (arch.gated_delta_net && ends_with(t.name, ".A_log")) {
                int64_t n = 1;
                for (int64_t d : dims) n *= d;
                std::vector<float> values(static_cast<size_t>(n));
                kernels::dequantize_row(t.type, t.data, values.data(), n);
                for (float& v : values) v = -std::exp(v);
                add_computed(name, std::move(dims), std::move(values));
                continue;
            }
            const bool gated_norm = arch.gated_delta_net && ends_with(t.name, "linear_attn.norm.weight");
            if (arch.norm_plus_one && ends_with(t.name, "norm.weight") && !gated_norm) {
                int64_t n = 1;
                for (int64_t d : dims) n *= d;
                std::vector<float> values(static_cast<size_t>(n));
                kernels::dequantize_row(t.type, t.data, values.data(), n);
                for (float& v : values) v += 1.0f;
                add_computed(name, std::move(dims), std::move(values));
                continue;
            }
            GgufTensor g;
            g.name = name;
            g.dims = std::move(dims);
            g.type = static_cast<uint32_t>(t.type);
            g.data = t.data;
            g.nbytes = t.nbytes;
            add_tensor(std::move(g));
        }
    }
    if (!tied && find_tensor("output.weight") == nullptr)
        fail("tensor 'lm_head.weight' is missing (config.json says tie_word_embeddings is false)");
}

bool HfModel::add_interleaved_experts(const SafetensorsTensor& t, const std::string& name) {
    const bool gate_up = name.find(".ffn_gate_up_exps.") != std::string::npos;
    const bool down = ends_with(name, ".ffn_down_exps.weight");
    if (!gate_up && !down) return false;
    const bool bias = ends_with(name, ".bias");
    if (t.shape.size() != (bias ? 2u : 3u) || (gate_up && t.shape.back() % 2 != 0))
        fail("tensor '" + t.name + "' is not a bank of " + (bias ? "[experts, rows]" : "[experts, in, out]") +
             (gate_up ? " with an even gate/up width" : ""));
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<float> bank(static_cast<size_t>(n));
    kernels::dequantize_row(t.type, t.data, bank.data(), n);
    const int64_t experts = t.shape[0];
    if (down) {  // [experts, ffn, dim] -> each expert's [dim, ffn]
        const int64_t ffn = t.shape[1], dim = t.shape[2];
        std::vector<float> rows(static_cast<size_t>(n));
        for (int64_t e = 0; e < experts; ++e)
            for (int64_t j = 0; j < ffn; ++j)
                for (int64_t i = 0; i < dim; ++i) rows[(e * dim + i) * ffn + j] = bank[(e * ffn + j) * dim + i];
        add_computed(name, {ffn, dim, experts}, std::move(rows));
        return true;
    }
    // Column 2j of a row is gate j, column 2j + 1 up j.
    const int64_t in = bias ? 1 : t.shape[1], ffn = t.shape.back() / 2;
    std::vector<float> gate(static_cast<size_t>(n / 2)), up(static_cast<size_t>(n / 2));
    for (int64_t e = 0; e < experts; ++e)
        for (int64_t i = 0; i < in; ++i)
            for (int64_t j = 0; j < ffn; ++j) {
                const float* pair = &bank[((e * in + i) * ffn + j) * 2];
                const size_t at = static_cast<size_t>((e * ffn + j) * in + i);  // expert e's row j, column i
                gate[at] = pair[0], up[at] = pair[1];
            }
    const size_t cut = name.find("gate_up");
    std::string gate_name = name, up_name = name;
    gate_name.replace(cut, 7, "gate"), up_name.replace(cut, 7, "up");
    std::vector<int64_t> dims = bias ? std::vector<int64_t>{ffn, experts} : std::vector<int64_t>{in, ffn, experts};
    add_computed(gate_name, dims, std::move(gate));
    add_computed(up_name, dims, std::move(up));
    return true;
}

void HfModel::check_gpt_oss_config(const json::Value& config) const {
    // The published checkpoints keep their experts as MXFP4 blocks and
    // scales (gate_up_proj_blocks, ...), which this loader does not read.
    if (const json::Value* q = config.find("quantization_config"); q != nullptr && !q->is_null())
        fail("config.json 'quantization_config' " + json::dump(*q) + " is not supported (the MXFP4 expert blocks "
             "of the published gpt-oss checkpoints are not read here; load a GGUF of the model instead)");
    for (const auto& [key, value] : {std::pair{"swiglu_alpha", 1.702}, std::pair{"swiglu_limit", 7.0}}) {
        const json::Value* v = config.find(key);
        if (v != nullptr && !v->is_null() && !(v->is_number() && std::fabs(v->as_double() - value) < 1e-6))
            fail(std::string("config.json '") + key + "' is " + json::dump(*v) + ", which is not supported (only " +
                 json::dump(json::Value(value)) + ")");
    }
    const json::Value* types = config.find("layer_types");
    if (types == nullptr || types->is_null()) return;
    if (!types->is_array()) fail("config.json 'layer_types' is not a list");
    const std::vector<json::Value>& items = types->items();
    for (size_t i = 0; i < items.size(); ++i) {
        const char* expected = i % 2 == 0 ? "sliding_attention" : "full_attention";
        const json::Value& type = items[i];
        if (!type.is_string() || type.as_string() != expected)
            fail("config.json 'layer_types'[" + std::to_string(i) + "] is " + json::dump(type) + ", but gpt-oss's layers "
                 "alternate sliding_attention (even) and full_attention (odd), which is all this engine runs");
    }
}

void HfModel::read_gated_delta_net_config(const json::Value& config, const std::string& a) {
    const auto positive = [&](const char* key) {
        const json::Value* v = config.find(key);
        if (v == nullptr || !v->is_int() || v->as_int() <= 0) fail(std::string("config.json '") + key + "' is not a positive integer");
        return v->as_int();
    };
    const int64_t v_heads = positive("linear_num_value_heads");
    metadata_[a + "ssm.inner_size"] = int_value(positive("linear_value_head_dim") * v_heads);
    metadata_["vllm.linear_v_heads"] = string_value("grouped");
    if (find(a + "feed_forward_length") == nullptr && find(a + "expert_feed_forward_length") != nullptr)
        metadata_[a + "feed_forward_length"] = *find(a + "expert_feed_forward_length");
    const json::Value* types = config.find("layer_types");
    if (types == nullptr || types->is_null()) {
        if (const json::Value* interval = config.find("full_attention_interval"); interval != nullptr && !interval->is_null()) {
            if (!interval->is_int()) fail("config.json 'full_attention_interval' is not an integer");
            metadata_[a + "full_attention_interval"] = int_value(interval->as_int());
        }
        return;
    }
    if (!types->is_array()) fail("config.json 'layer_types' is not a list");
    GgufValue flags;
    flags.type = GgufValueType::ARRAY;
    flags.element_type = GgufValueType::BOOL;
    for (size_t i = 0; i < types->items().size(); ++i) {
        const json::Value& type = types->items()[i];
        const bool linear = type.is_string() && type.as_string() == "linear_attention";
        if (!linear && !(type.is_string() && type.as_string() == "full_attention"))
            fail("config.json 'layer_types'[" + std::to_string(i) + "] is " + json::dump(type) +
                 " (expected \"linear_attention\" or \"full_attention\")");
        flags.packed_scalars.push_back(linear ? 1 : 0);
    }
    metadata_[a + "attention.recurrent_layers"] = std::move(flags);
}

void HfModel::add_computed(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    computed_.push_back(std::move(values));  // moving keeps the buffer the tensor points into
    GgufTensor t;
    t.name = name;
    t.dims = std::move(dims);
    t.type = static_cast<uint32_t>(GgmlType::F32);
    t.data = reinterpret_cast<const uint8_t*>(computed_.back().data());
    t.nbytes = computed_.back().size() * sizeof(float);
    add_tensor(std::move(t));
}

void HfModel::limit_vocab(int64_t n) {
    for (GgufTensor& t : tensors_) {
        if ((t.name != "token_embd.weight" && t.name != "output.weight") || t.dims.size() != 2 || t.dims[1] <= n) continue;
        t.nbytes = t.nbytes / static_cast<size_t>(t.dims[1]) * static_cast<size_t>(n);
        t.dims[1] = n;
    }
}

void HfModel::release(const uint8_t* data, size_t n) const {
    for (const std::unique_ptr<SafetensorsFile>& shard : shards_)
        if (shard->holds(data)) shard->release(data, n);
}

}  // namespace vllm
