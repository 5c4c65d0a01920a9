#include "formats/hf_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "formats/hf_architecture.h"
#include "formats/hf_json.h"
#include "formats/sentence_transformers.h"
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

// An array of integers (or of bools) as GGUF metadata.
GgufValue int_array_value(const std::vector<int64_t>& values, GgufValueType element_type) {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.element_type = element_type;
    const size_t size = gguf_scalar_size(element_type);
    for (int64_t x : values)
        for (size_t b = 0; b < size; ++b) v.packed_scalars.push_back(static_cast<uint8_t>(uint64_t(x) >> (8 * b)));
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
    read_pooling(config, std::string(arch->gguf_name) + ".");
    read_encoder_extras(config, *arch);

    bool tied = arch->tie_default;
    if (const json::Value* tie = config.find("tie_word_embeddings"); tie != nullptr && !tie->is_null()) {
        if (!tie->is_bool()) fail("config.json 'tie_word_embeddings' is not a boolean");
        tied = tie->as_bool();
    }
    open_shards();
    add_tensors(*arch, tied);
}

void HfModel::read_classifier_activations(const json::Value& config) {
    if (const json::Value* v = config.find("problem_type"); v != nullptr && v->is_string())
        metadata_["vllm.classifier_problem_type"] = string_value(v->as_string());
    // sentence-transformers' CrossEncoder: its activation_fn, or the older key.
    const json::Value* st = config.find("sentence_transformers");
    const json::Value* fn = st != nullptr && st->is_object() ? st->find("activation_fn") : nullptr;
    if (fn == nullptr || !fn->is_string()) fn = config.find("sbert_ce_default_activation_function");
    if (fn != nullptr && fn->is_string()) metadata_["vllm.score_activation"] = string_value(fn->as_string());
}

void HfModel::read_encoder_extras(const json::Value& config, const HfArchitecture& arch) {
    const std::string a = std::string(arch.gguf_name) + ".";
    if (arch.roberta_positions) {
        int64_t pad = 1;  // transformers' XLMRobertaConfig default
        if (const json::Value* v = config.find("pad_token_id"); v != nullptr && !v->is_null()) {
            if (!v->is_int() || v->as_int() < 0) fail("config.json 'pad_token_id' is not a non-negative integer");
            pad = v->as_int();
        }
        position_offset_ = pad + 1;
        const int64_t positions = get_int(a + "context_length", 0);
        if (positions <= position_offset_)
            fail("config.json 'max_position_embeddings' " + std::to_string(positions) +
                 " leaves no position after RoBERTa's offset (pad_token_id + 1 = " + std::to_string(position_offset_) + ")");
        metadata_[a + "context_length"] = int_value(positions - position_offset_);
    }
    if (!arch.classifier_labels) return;
    read_classifier_activations(config);
    const json::Value* labels = config.find("id2label");
    if (labels == nullptr || !labels->is_object()) return;
    std::vector<std::string> names(labels->members().size());
    for (const json::Value::Member& m : labels->members()) {
        size_t id = names.size();
        try {
            id = std::stoul(m.first);
        } catch (const std::exception&) {
        }
        if (id >= names.size() || !m.second.is_string())
            fail("config.json 'id2label' maps '" + m.first + "', which is not a label id below " +
                 std::to_string(names.size()) + " with a name");
        names[id] = m.second.as_string();
    }
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.element_type = GgufValueType::STRING;
    for (const std::string& name : names) {
        v.packed_strings += name;
        v.string_ends.push_back(v.packed_strings.size());
    }
    metadata_[a + "classifier.output_labels"] = std::move(v);
}

void HfModel::read_pooling(const json::Value& config, const std::string& a) {
    // sentence-transformers' pooling under the key llama.cpp's converter
    // writes, its Normalize module and config.json's Matryoshka keys under
    // this engine's own (engine/pooler.h reads them).
    if (const std::optional<SentenceTransformersPooling> st = read_sentence_transformers(path())) {
        metadata_[a + "pooling_type"] = int_value(st->pooling_type);
        GgufValue normalize = int_value(st->normalize ? 1 : 0);
        normalize.type = GgufValueType::BOOL;
        metadata_["vllm.pooling_normalize"] = normalize;
    }
    if (const json::Value* m = config.find("is_matryoshka"); m != nullptr && m->is_bool() && m->as_bool()) {
        GgufValue yes = int_value(1);
        yes.type = GgufValueType::BOOL;
        metadata_["vllm.is_matryoshka"] = yes;
    }
    if (const json::Value* dims = config.find("matryoshka_dimensions"); dims != nullptr && dims->is_array()) {
        std::vector<int64_t> values;
        for (const json::Value& d : dims->items()) {
            if (!d.is_int() || d.as_int() < 1) fail("config.json 'matryoshka_dimensions' is not a list of positive integers");
            values.push_back(d.as_int());
        }
        metadata_["vllm.matryoshka_dimensions"] = int_array_value(values, GgufValueType::INT32);
    }
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
    if (arch.mla) read_mla_config(config, a);
    if (arch.gemma4_layers)
        read_gemma4_config(config, a);
    else
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
        const double mscale = number("mscale", 0.0), mscale_all_dim = number("mscale_all_dim", 0.0);
        if (a == "deepseek2." && mscale == mscale_all_dim && mscale > 0.0) {
            // As llama.cpp's converter writes DeepSeek's (model_config.cpp's read_mla).
            metadata_[a + "rope.scaling.yarn_log_multiplier"] = float_value(0.1 * mscale_all_dim);
        } else if (a == "deepseek2." && (mscale != 0.0 || mscale_all_dim != 0.0)) {
            fail("config.json rope_scaling 'mscale' " + json::dump(json::Value(mscale)) + " and 'mscale_all_dim' " +
                 json::dump(json::Value(mscale_all_dim)) + " differ, which is not supported (only equal values, as "
                 "DeepSeek-V2's configs have; GGUF stores only mscale_all_dim)");
        } else {
            for (const char* key : {"mscale", "mscale_all_dim"})
                if (number(key, 0.0) != 0.0)
                    fail(std::string("config.json rope_scaling '") + key +
                         "' (DeepSeek's YaRN attention factor) is not supported");
        }
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
            if (arch.mla && ends_with(name, ".attn_kv_b.weight")) {
                split_kv_b(t, name);
                continue;
            }
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
            if (position_offset_ > 0 && name == "position_embd.weight") {
                // RoBERTa: the rows from pad_token_id + 1 on (a view).
                if (g.dims.size() != 2 || g.dims[1] <= position_offset_)
                    fail("tensor '" + t.name + "' has no rows past RoBERTa's position offset");
                const size_t row_bytes = g.nbytes / static_cast<size_t>(g.dims[1]);
                g.data += row_bytes * static_cast<size_t>(position_offset_);
                g.nbytes -= row_bytes * static_cast<size_t>(position_offset_);
                g.dims[1] -= position_offset_;
            }
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

void HfModel::read_mla_config(const json::Value& config, const std::string& a) {
    const auto positive = [&](const char* key) {
        const json::Value* v = config.find(key);
        if (v == nullptr || !v->is_int() || v->as_int() <= 0)
            fail(std::string("config.json '") + key + "' is missing or not a positive integer");
        return v->as_int();
    };
    const int64_t kv_lora = positive("kv_lora_rank"), nope = positive("qk_nope_head_dim");
    const int64_t rope = positive("qk_rope_head_dim");
    positive("v_head_dim");
    metadata_[a + "attention.head_count_kv"] = int_value(1);
    metadata_[a + "attention.key_length"] = int_value(kv_lora + rope);
    metadata_[a + "attention.value_length"] = int_value(kv_lora);
    metadata_[a + "attention.key_length_mla"] = int_value(nope + rope);
    // transformers routes by groups only for group_limited_greedy (each
    // group scored by its best expert: model_config's vllm.expert_group_score).
    std::string method = "greedy";
    if (const json::Value* v = config.find("topk_method"); v != nullptr && !v->is_null())
        method = v->is_string() ? v->as_string() : json::dump(*v);
    if (method == "group_limited_greedy") {
        metadata_["vllm.expert_group_score"] = string_value("max");
    } else if (method == "greedy") {
        metadata_.erase(a + "expert_group_count");
        metadata_.erase(a + "expert_group_used_count");
    } else {
        fail("config.json 'topk_method' is " + json::dump(*config.find("topk_method")) +
             ", which is not supported (only \"greedy\" and \"group_limited_greedy\")");
    }
}

void HfModel::split_kv_b(const SafetensorsTensor& t, const std::string& name) {
    const int64_t heads = get_int(std::string("deepseek2.attention.head_count"), 0);
    const int64_t v = get_int("deepseek2.attention.value_length_mla", 0);
    const int64_t nope = get_int("deepseek2.attention.key_length_mla", 0) - get_int("deepseek2.rope.dimension_count", 0);
    if (t.shape.size() != 2 || heads <= 0 || t.shape[0] != heads * (nope + v))
        fail("tensor '" + t.name + "' is not [num_attention_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank] = [" +
             std::to_string(heads * (nope + v)) + ", kv_lora_rank]");
    const int64_t lora = t.shape[1];
    std::vector<float> kv(static_cast<size_t>(t.shape[0] * lora));
    kernels::dequantize_row(t.type, t.data, kv.data(), static_cast<int64_t>(kv.size()));
    // Per head: rows [nope keys, then v values] of kv_lora columns. k_b is
    // each head's key rows transposed ([kv_lora][nope]), v_b its value rows.
    std::vector<float> k_b(static_cast<size_t>(heads * lora * nope)), v_b(static_cast<size_t>(heads * v * lora));
    for (int64_t h = 0; h < heads; ++h) {
        const float* head = kv.data() + h * (nope + v) * lora;
        for (int64_t i = 0; i < nope; ++i)
            for (int64_t j = 0; j < lora; ++j) k_b[(h * lora + j) * nope + i] = head[i * lora + j];
        std::copy_n(head + nope * lora, v * lora, v_b.data() + h * v * lora);
    }
    const std::string stem = name.substr(0, name.size() - std::string("kv_b.weight").size());
    add_computed(stem + "k_b.weight", {nope, lora, heads}, std::move(k_b));
    add_computed(stem + "v_b.weight", {lora, v, heads}, std::move(v_b));
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

void HfModel::read_gemma4_config(const json::Value& config, const std::string& a) {
    const auto integer = [&](const json::Value& parent, const char* key, int64_t fallback) {
        const json::Value* v = parent.find(key);
        if (v == nullptr || v->is_null()) return fallback;
        if (!v->is_int()) fail(std::string("config.json '") + key + "' is not an integer");
        return v->as_int();
    };
    const auto flag = [&](const char* key) {
        const json::Value* v = config.find(key);
        if (v == nullptr || v->is_null()) return false;
        if (!v->is_bool()) fail(std::string("config.json '") + key + "' is not a boolean");
        return v->as_bool();
    };
    for (const char* key : {"enable_moe_block", "attention_bias"})
        if (flag(key))
            fail(std::string("config.json '") + key + "' is true, which is not supported for Gemma 4 (" +
                 (key[0] == 'e' ? "its mixture-of-experts layers, the 26B-A4B model, are not implemented)"
                                : "llama.cpp's Gemma 4 has no attention biases either)"));
    if (const json::Value* v = config.find("use_bidirectional_attention");
        v != nullptr && !v->is_null() && !(v->is_string() && v->as_string() == "vision"))
        fail("config.json 'use_bidirectional_attention' is " + json::dump(*v) +
             ", which is not supported (text tokens attend causally here; only null or \"vision\")");
    if (const json::Value* v = config.find("hidden_activation");
        v != nullptr && !v->is_null() && !(v->is_string() && v->as_string() == "gelu_pytorch_tanh"))
        fail("config.json 'hidden_activation' is " + json::dump(*v) + ", which is not supported (only gelu_pytorch_tanh)");

    const json::Value* types = config.find("layer_types");
    const int64_t n_layers = get_int(a + "block_count", 0);
    if (types == nullptr || !types->is_array() || static_cast<int64_t>(types->size()) != n_layers)
        fail("config.json 'layer_types' is not a list of num_hidden_layers layer types");
    std::vector<int64_t> sliding;
    int64_t first_full = -1;
    for (const json::Value& t : types->items()) {
        const bool is_sliding = t.is_string() && t.as_string() == "sliding_attention";
        if (!is_sliding && !(t.is_string() && t.as_string() == "full_attention"))
            fail("config.json 'layer_types' has " + json::dump(t) + " (only sliding_attention and full_attention)");
        if (!is_sliding && first_full < 0) first_full = static_cast<int64_t>(sliding.size());
        sliding.push_back(is_sliding ? 1 : 0);
    }
    metadata_[a + "attention.sliding_window_pattern"] = int_array_value(sliding, GgufValueType::BOOL);

    // The full layers' head size and KV heads: global_head_dim /
    // num_global_key_value_heads (the published configs; KV heads only with
    // attention_k_eq_v), or a full layer's entry in per_layer_config
    // (transformers 5 writes that instead), as llama.cpp's converter reads them.
    const json::Value* per_layer = member_object(config, "per_layer_config", "");
    const json::Value* full = nullptr;
    if (per_layer != nullptr && first_full >= 0) full = member_object(*per_layer, std::to_string(first_full), "per_layer_config ");
    const int64_t head_swa = get_int(a + "attention.key_length", 0);
    const int64_t kv_swa = get_int(a + "attention.head_count_kv", get_int(a + "attention.head_count", 0));
    const int64_t head_full = integer(config, "global_head_dim", full ? integer(*full, "head_dim", head_swa) : head_swa);
    const int64_t kv_full = flag("attention_k_eq_v") ? integer(config, "num_global_key_value_heads",
                                                               full ? integer(*full, "num_key_value_heads", kv_swa) : kv_swa)
                                                     : kv_swa;
    if (head_swa <= 0 || head_full <= 0 || kv_full <= 0) fail("config.json has no positive head_dim / global_head_dim");
    for (const char* suffix : {"attention.key_length", "attention.value_length"}) metadata_[a + suffix] = int_value(head_full);
    for (const char* suffix : {"attention.key_length_swa", "attention.value_length_swa"})
        metadata_[a + suffix] = int_value(head_swa);
    std::vector<int64_t> kv_heads;
    for (int64_t s : sliding) kv_heads.push_back(s ? kv_swa : kv_full);
    metadata_[a + "attention.head_count_kv"] = int_array_value(kv_heads, GgufValueType::INT32);

    const int64_t shared = integer(config, "num_kv_shared_layers", 0);
    metadata_[a + "attention.shared_kv_layers"] = int_value(shared);
    const int64_t per_layer_width = integer(config, "hidden_size_per_layer_input", 0);
    if (per_layer_width > 0 &&
        integer(config, "vocab_size_per_layer_input", get_int(a + "vocab_size", 0)) != get_int(a + "vocab_size", 0))
        fail("config.json 'vocab_size_per_layer_input' differs from 'vocab_size' (not supported)");
    metadata_[a + "embedding_length_per_layer_input"] = int_value(per_layer_width);
    if (flag("use_double_wide_mlp")) {  // the KV-sharing layers' MLP is twice as wide
        const int64_t ffn = get_int(a + "feed_forward_length", 0);
        std::vector<int64_t> widths;
        for (int64_t l = 0; l < n_layers; ++l) widths.push_back(l < n_layers - shared ? ffn : 2 * ffn);
        metadata_[a + "feed_forward_length"] = int_array_value(widths, GgufValueType::INT32);
    }

    // RoPE: the sliding layers' default rotation over their whole head; the
    // full layers' "proportional" one over the whole head with only the
    // first partial_rotary_factor of its pairs turning (llama.cpp's
    // converter: rope_freqs 1 for those, 1e30 for the rest).
    const json::Value* rope = member_object(config, "rope_parameters", "");
    const json::Value* rope_full = rope ? member_object(*rope, "full_attention", "rope_parameters ") : nullptr;
    const json::Value* rope_swa = rope ? member_object(*rope, "sliding_attention", "rope_parameters ") : nullptr;
    if (rope_full == nullptr || rope_swa == nullptr)
        fail("config.json 'rope_parameters' has no 'full_attention' and 'sliding_attention' entries");
    read_sliding_rope(*rope_swa, a);
    if (const json::Value* partial = rope_swa->find("partial_rotary_factor");
        partial != nullptr && !partial->is_null() && !(partial->is_number() && partial->as_double() == 1.0))
        fail("config.json rope_parameters 'sliding_attention' 'partial_rotary_factor' is not 1 (not supported)");
    metadata_[a + "rope.dimension_count_swa"] = int_value(head_swa);
    metadata_[a + "rope.dimension_count"] = int_value(head_full);
    const json::Value* theta = rope_full->find("rope_theta");
    if (theta == nullptr || !theta->is_number()) fail("config.json rope_parameters 'full_attention' has no 'rope_theta'");
    metadata_[a + "rope.freq_base"] = float_value(theta->as_double());
    const json::Value* kind = rope_full->find("rope_type");
    const std::string type = kind != nullptr && kind->is_string() ? kind->as_string() : "default";
    const json::Value* factor = rope_full->find("factor");
    if (factor != nullptr && !factor->is_null() && !(factor->is_number() && factor->as_double() == 1.0))
        fail("config.json rope_parameters 'full_attention' 'factor' is not 1 (not supported)");
    if (type == "default") return;
    if (type != "proportional")
        fail("config.json rope_parameters 'full_attention' 'rope_type' is '" + type +
             "' (supported for Gemma 4: default, proportional)");
    const json::Value* partial = rope_full->find("partial_rotary_factor");
    const double fraction = partial != nullptr && partial->is_number() ? partial->as_double() : 1.0;
    if (!(fraction > 0.0 && fraction <= 1.0))
        fail("config.json rope_parameters 'full_attention' 'partial_rotary_factor' is not in (0, 1]");
    const int64_t pairs = head_full / 2, rotated = static_cast<int64_t>(fraction * double(head_full) / 2.0);
    std::vector<float> divisors(static_cast<size_t>(pairs), 1e30f);
    std::fill(divisors.begin(), divisors.begin() + rotated, 1.0f);
    add_computed("rope_freqs.weight", {pairs}, std::move(divisors));
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
