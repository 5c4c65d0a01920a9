// Reads a PEFT LoRA directory into a LoraAdapter checked against the base
// model (lora_adapter.h).
#include "model/lora_adapter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "formats/gguf_reader.h"
#include "formats/hf_json.h"
#include "formats/safetensors_file.h"
#include "kernels/cpu/kernels.h"
#include "util/error.h"

namespace vllm {

size_t LoraAdapter::bytes() const {
    size_t n = 0;
    for (const auto& layer : layers)
        for (const LoraMatrices& m : layer) n += (m.a.size() + m.b_scaled.size()) * sizeof(float);
    for (const auto& layer : experts)
        for (const auto& expert : layer)
            for (const LoraMatrices& m : expert) n += (m.a.size() + m.b_scaled.size()) * sizeof(float);
    return n;
}

namespace {

// A PEFT module (the path after "layers.<i>.") and the projections its B
// rows cover, in order (a fused module's rows are its parts' rows stacked).
struct ModuleTargets {
    const char* short_name;
    std::vector<LoraTarget> targets;
    bool shared_expert = false;  // a mixture-of-experts layer's shared expert (its dense gated MLP)
};
const std::map<std::string, ModuleTargets>& known_modules() {
    static const std::map<std::string, ModuleTargets> modules = {
        {"self_attn.q_proj", {"q_proj", {LoraTarget::Q}}},
        {"self_attn.k_proj", {"k_proj", {LoraTarget::K}}},
        {"self_attn.v_proj", {"v_proj", {LoraTarget::V}}},
        {"self_attn.o_proj", {"o_proj", {LoraTarget::O}}},
        {"self_attn.qkv_proj", {"qkv_proj", {LoraTarget::Q, LoraTarget::K, LoraTarget::V}}},
        {"mlp.gate_proj", {"gate_proj", {LoraTarget::GATE}}},
        {"mlp.up_proj", {"up_proj", {LoraTarget::UP}}},
        {"mlp.down_proj", {"down_proj", {LoraTarget::DOWN}}},
        {"mlp.gate_up_proj", {"gate_up_proj", {LoraTarget::GATE, LoraTarget::UP}}},
        {"mlp.shared_expert.gate_proj", {"gate_proj", {LoraTarget::GATE}, true}},
        {"mlp.shared_expert.up_proj", {"up_proj", {LoraTarget::UP}, true}},
        {"mlp.shared_expert.down_proj", {"down_proj", {LoraTarget::DOWN}, true}},
    };
    return modules;
}

const char* target_name(LoraTarget t) {
    static const char* names[kLoraTargets] = {"q", "k", "v", "o", "gate", "up", "down"};
    return names[static_cast<int>(t)];
}

const kernels::QuantMatrix& base_matrix(const LayerWeights& w, LoraTarget t) {
    switch (t) {
        case LoraTarget::Q: return w.wq;
        case LoraTarget::K: return w.wk;
        case LoraTarget::V: return w.wv;
        case LoraTarget::O: return w.wo;
        case LoraTarget::GATE: return w.w_gate;
        case LoraTarget::UP: return w.w_up;
        case LoraTarget::DOWN: return w.w_down;
    }
    return w.wq;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

class PeftReader {
public:
    PeftReader(std::string name, const ModelConfig& config, const ModelWeights& weights)
        : name_(std::move(name)), config_(config), weights_(weights) {}

    [[noreturn]] void fail(const std::string& why) const {
        throw_model_load("LoRA adapter '" + name_ + "': " + why);
    }

    // adapter_config.json: rank, alpha, rsLoRA; what the forward cannot run refused by name.
    void read_config(const json::Value& c, int max_rank, LoraAdapter& adapter) {
        if (!c.is_object()) fail("adapter_config.json is not a JSON object");
        const json::Value* type = c.find("peft_type");
        if (type && !type->is_null() && (!type->is_string() || type->as_string() != "LORA"))
            fail("peft_type must be \"LORA\" (only LoRA adapters are supported)");
        const json::Value* r = c.find("r");
        if (!r || !r->is_int() || r->as_int() < 1) fail("adapter_config.json needs an integer r >= 1");
        rank_ = static_cast<int>(r->as_int());
        if (rank_ > max_rank)
            fail("rank " + std::to_string(rank_) + " is above max_lora_rank " + std::to_string(max_rank));
        const json::Value* alpha = c.find("lora_alpha");
        const double a = alpha && alpha->is_number() ? alpha->as_double() : 8.0;  // PEFT's default
        const json::Value* rs = c.find("use_rslora");
        const bool rslora = rs && rs->is_bool() && rs->as_bool();
        adapter.scale = static_cast<float>(rslora ? a / std::sqrt(double(rank_)) : a / rank_);
        // Options that change what the adapter computes, refused unless at their no-op values.
        refuse_unless_empty(c, "modules_to_save");
        refuse_unless_empty(c, "rank_pattern");
        refuse_unless_empty(c, "alpha_pattern");
        refuse_unless_empty(c, "layer_replication");
        refuse_unless_empty(c, "trainable_token_indices");
        read_target_parameters(c);
        refuse_unless_empty(c, "alora_invocation_tokens");  // activated LoRA: applied from a token on
        refuse_unless_empty(c, "arrow_config");             // routing among adapters
        refuse_if_true(c, "use_dora");
        refuse_if_true(c, "use_qalora");
        refuse_if_true(c, "use_bdlora");
        refuse_if_true(c, "fan_in_fan_out");
        refuse_if_true(c, "lora_bias");
        if (const json::Value* bias = c.find("bias"); bias && bias->is_string() && bias->as_string() != "none")
            fail("bias \"" + bias->as_string() + "\" is not supported (only \"none\")");
        if (const json::Value* targets = c.find("target_modules"); targets && targets->is_array())
            for (const json::Value& t : targets->items()) {
                if (!t.is_string()) fail("target_modules must hold strings");
                bool known = false;
                for (const auto& [path, m] : known_modules()) known = known || t.as_string() == m.short_name;
                if (!known) fail("target module '" + t.as_string() + "' is not supported (only q_proj, k_proj, v_proj, o_proj, qkv_proj, gate_proj, up_proj, down_proj, gate_up_proj)");
                listed_modules_.insert(t.as_string());
            }
    }

    // target_parameters: only the fused expert banks of the Qwen-MoE
    // layouts (gate and up stacked per expert, as the experts' forward
    // chunks them), whose product PEFT's ParamWrapper adds to each expert.
    void read_target_parameters(const json::Value& c) {
        const json::Value* v = c.find("target_parameters");
        if (!v || v->is_null() || ((v->is_array() || v->is_object()) && v->size() == 0)) return;
        if (!v->is_array()) fail("target_parameters must be a list");
        static const std::set<std::string> experts_layout = {"qwen2moe", "qwen3moe", "qwen35moe"};
        for (const json::Value& t : v->items()) {
            const std::string name = t.is_string() ? t.as_string() : "";
            const bool bank = ends_with(name, "experts.gate_up_proj") || ends_with(name, "experts.down_proj") ||
                              name == "gate_up_proj" || name == "down_proj";
            if (!bank)
                fail("target parameter '" + name + "' is not supported (only the mixture-of-experts banks "
                     "mlp.experts.gate_up_proj and mlp.experts.down_proj)");
            if (!experts_layout.count(config_.architecture))
                fail("target parameter '" + name + "': expert adapters are supported on qwen2moe, qwen3moe and "
                     "qwen35moe bases, not '" + config_.architecture + "' (its expert banks are laid out otherwise)");
            expects_experts_ = true;
        }
    }

    // The safetensors' pairs into `adapter`, each checked against its base matrix.
    void read_tensors(const SafetensorsFile& file, LoraAdapter& adapter) {
        std::map<std::string, const SafetensorsTensor*> by_name;
        for (const SafetensorsTensor& t : file.tensors()) by_name[t.name] = &t;
        std::set<std::string> seen_modules;
        for (const SafetensorsTensor& t : file.tensors()) {
            const std::string suffix_a = ".lora_A.weight", suffix_b = ".lora_B.weight";
            const bool is_a = ends_with(t.name, suffix_a), is_b = ends_with(t.name, suffix_b);
            if (!is_a && !is_b) fail("tensor '" + t.name + "' is not a LoRA A/B matrix of a supported module");
            const std::string module = t.name.substr(0, t.name.size() - suffix_a.size());
            const std::string other = module + (is_a ? suffix_b : suffix_a);
            if (!by_name.count(other)) fail("tensor '" + other + "' is missing (its pair '" + t.name + "' is there)");
            if (is_b) continue;  // each pair once, from its A
            const auto [layer, path] = split_module(t.name, module);
            if (is_expert_bank(path)) {
                if (!expects_experts_)
                    fail("tensor '" + t.name + "' adapts the expert banks but target_parameters does not name them");
                const SafetensorsTensor& b = *by_name[other];
                add_expert_pair(Pair{t.name, t.shape, to_float(t.type, t.data, t.shape, t.name), b.name, b.shape,
                                     to_float(b.type, b.data, b.shape, b.name)},
                                layer, adapter);
                seen_modules.insert("experts");
                continue;
            }
            const auto it = known_modules().find(path);
            if (it == known_modules().end())
                fail("tensor '" + t.name + "': module '" + path + "' is not supported (only the attention q/k/v/o and the MLP gate/up/down projections)");
            seen_modules.insert(it->second.short_name);
            const SafetensorsTensor& b = *by_name[other];
            add_pair(Pair{t.name, t.shape, to_float(t.type, t.data, t.shape, t.name), b.name, b.shape,
                          to_float(b.type, b.data, b.shape, b.name)},
                     layer, it->second.targets, /*checkpoint_rows=*/true, adapter, it->second.shared_expert);
        }
        for (const std::string& m : listed_modules_)
            if (!seen_modules.count(m)) fail("target module '" + m + "' has no lora_A/lora_B tensors in adapter_model.safetensors");
        if (expects_experts_ && !seen_modules.count("experts"))
            fail("target_parameters names the expert banks but adapter_model.safetensors has no mlp.experts tensors");
        if (seen_modules.empty()) fail("adapter_model.safetensors has no LoRA tensors");
    }

private:
    static bool ends_with(const std::string& s, const std::string& suffix) {
        return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    }

    // "mlp.experts", or PEFT's nesting of one ParamWrapper per target
    // parameter: "mlp.experts.base_layer[.base_layer...]".
    static bool is_expert_bank(const std::string& path) {
        const std::string head = "mlp.experts";
        if (path.compare(0, head.size(), head) != 0) return false;
        for (size_t at = head.size(); at < path.size(); at += std::string(".base_layer").size())
            if (path.compare(at, 11, ".base_layer") != 0) return false;
        return true;
    }

    void refuse_unless_empty(const json::Value& c, const char* key) const {
        const json::Value* v = c.find(key);
        if (!v || v->is_null()) return;
        if ((v->is_array() || v->is_object()) && v->size() == 0) return;
        fail(std::string(key) + " is not supported (the adapter must leave it empty)");
    }
    void refuse_if_true(const json::Value& c, const char* key) const {
        const json::Value* v = c.find(key);
        if (v && v->is_bool() && v->as_bool()) fail(std::string(key) + " is not supported");
    }

    // "base_model.model.model.layers.3.self_attn.q_proj" -> (3, "self_attn.q_proj").
    std::pair<int, std::string> split_module(const std::string& tensor, const std::string& module) const {
        const std::string marker = "layers.";
        const size_t at = module.rfind(marker);
        if (at == std::string::npos || (at > 0 && module[at - 1] != '.'))
            fail("tensor '" + tensor + "' is not in a decoder layer (only the layers' projections are supported)");
        size_t end = at + marker.size();
        int layer = 0;
        bool digits = false;
        while (end < module.size() && std::isdigit(static_cast<unsigned char>(module[end]))) {
            layer = layer * 10 + (module[end++] - '0');
            digits = true;
            if (layer > 1000000) break;
        }
        if (!digits || end >= module.size() || module[end] != '.') fail("tensor '" + tensor + "': no layer index");
        if (layer >= config_.n_layers)
            fail("tensor '" + tensor + "': layer " + std::to_string(layer) + " is past the base model's " +
                 std::to_string(config_.n_layers) + " layers");
        return {layer, module.substr(end + 1)};
    }

    std::vector<float> to_float(GgmlType type, const uint8_t* data, const std::vector<int64_t>& shape,
                                const std::string& name) const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::BF16)
            fail("tensor '" + name + "' must be F32, F16 or BF16");
        std::vector<float> out(static_cast<size_t>(n));
        kernels::dequantize_row(type, data, out.data(), n);
        return out;
    }

    // Whether the base model's q/k rows are llama.cpp's converter's RoPE
    // permutation of the checkpoint's (a GGUF of a Llama-style model; an HF
    // directory reads its rows as trained and says so with rope_style halves).
    bool qk_rows_permuted() const {
        return config_.traits.rope_style == RopeStyle::ADJACENT_PAIRS && config_.architecture != "glm4";
    }

public:
    // One module's A [rank][in] and B [out][rank] (row-major shapes, as safetensors store them).
    struct Pair {
        std::string a_name;
        std::vector<int64_t> a_shape;
        std::vector<float> a;
        std::string b_name;
        std::vector<int64_t> b_shape;
        std::vector<float> b;
    };
    void set_rank(int rank) { rank_ = rank; }
    int rank() const { return rank_; }

    // checkpoint_rows: B's q/k rows as trained (PEFT), permuted where the
    // base's are; false: already as the base file has them (llama.cpp's
    // LoRA converter permutes them itself).
    // shared_expert: the pair is for a mixture-of-experts layer's shared
    // expert (the layer's w_gate/w_up/w_down), not a dense MLP.
    void add_pair(const Pair& pair, int layer, const std::vector<LoraTarget>& targets, bool checkpoint_rows,
                  LoraAdapter& adapter, bool shared_expert = false) {
        struct { const std::string& name; const std::vector<int64_t>& shape; } a_t{pair.a_name, pair.a_shape},
            b_t{pair.b_name, pair.b_shape};
        const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
        if (a_t.shape.size() != 2 || b_t.shape.size() != 2)
            fail("tensors '" + a_t.name + "' and '" + b_t.name + "' must be matrices (got " + shape_text(a_t.shape) +
                 " and " + shape_text(b_t.shape) + ")");
        const int64_t rank = a_t.shape[0], in = a_t.shape[1], out = b_t.shape[0];
        if (rank != rank_ || b_t.shape[1] != rank)
            fail("tensors '" + a_t.name + "' " + shape_text(a_t.shape) + " and '" + b_t.name + "' " +
                 shape_text(b_t.shape) + " do not have the adapter's rank r = " + std::to_string(rank_));
        int64_t base_rows = 0;
        std::vector<int64_t> base_shape;
        for (LoraTarget t : targets) {
            const kernels::QuantMatrix& m = base_matrix(w, t);
            if (m.rows == 0 || (config_.is_mla() && t <= LoraTarget::V) ||
                (config_.architecture == "gemma4" && t <= LoraTarget::O) ||
                (t >= LoraTarget::GATE && config_.is_moe_layer(layer) != shared_expert))
                fail("tensor '" + a_t.name + "': layer " + std::to_string(layer) + " of the base model has no plain " +
                     target_name(t) + " projection an adapter can target (latent attention's q/k/v, linear attention, "
                     "Gemma 4's attention, and a mixture-of-experts layer's MLP other than its shared expert are not "
                     "supported; its experts take target_parameters)");
            if (m.cols != in)
                fail("tensor '" + a_t.name + "' " + shape_text(a_t.shape) + " does not match the base model's " +
                     target_name(t) + " projection of layer " + std::to_string(layer) + " [" + std::to_string(m.rows) +
                     ", " + std::to_string(m.cols) + "] (input size " + std::to_string(in) + " != " +
                     std::to_string(m.cols) + ")");
            base_rows += m.rows;
            base_shape.push_back(m.rows);
        }
        if (out != base_rows)
            fail("tensor '" + b_t.name + "' " + shape_text(b_t.shape) + " does not match the base model's projection" +
                 (targets.size() > 1 ? "s " : " ") + "of layer " + std::to_string(layer) + " (rows " +
                 shape_text(base_shape) + ", input size " + std::to_string(in) + ")");
        const std::vector<float>& a = pair.a;
        const std::vector<float>& b = pair.b;
        if (adapter.layers.empty()) adapter.layers.resize(static_cast<size_t>(config_.n_layers));
        int64_t row0 = 0;
        for (LoraTarget t : targets) {
            LoraMatrices& m = adapter.layers[static_cast<size_t>(layer)][static_cast<int>(t)];
            if (m.rank > 0) fail("tensor '" + a_t.name + "': layer " + std::to_string(layer) + "'s " + target_name(t) +
                                 " projection has two adapters (a fused and a separate module)");
            const int64_t rows = base_matrix(w, t).rows;
            m.rank = static_cast<int>(rank);
            m.in = in;
            m.out = rows;
            m.a = a;
            m.b_scaled.assign(static_cast<size_t>(rank * rows), 0.0f);
            const bool permute = checkpoint_rows && qk_rows_permuted() && (t == LoraTarget::Q || t == LoraTarget::K);
            const int64_t hd = config_.head_dim;
            for (int64_t o = 0; o < rows; ++o) {
                // llama.cpp's permute: within a head, the checkpoint's row
                // (half j, pair i) becomes row 2 i + j.
                int64_t src = o;
                if (permute) {
                    const int64_t head = o / hd, within = o % hd;
                    src = head * hd + (within % 2) * (hd / 2) + within / 2;
                }
                for (int64_t r = 0; r < rank; ++r)
                    m.b_scaled[static_cast<size_t>(r * rows + o)] = adapter.scale * b[static_cast<size_t>((row0 + src) * rank + r)];
            }
            row0 += rows;
        }
        adapter.rank = std::max(adapter.rank, static_cast<int>(rank));
    }

    // One expert bank's pair (PEFT's ParamWrapper over an [experts][out][in]
    // parameter): A [rank * experts][in], expert e's rows e * rank ...; B
    // [out][rank * experts], expert e's column k at k * experts + e. Which
    // bank it is follows from the shapes: gate_up [2 ffn][dim] (gate's rows
    // first) or down [dim][ffn].
    void add_expert_pair(const Pair& pair, int layer, LoraAdapter& adapter) {
        const int64_t E = config_.n_experts, H = config_.dim, I = config_.expert_ffn_dim;
        if (!config_.is_moe_layer(layer))
            fail("tensor '" + pair.a_name + "': layer " + std::to_string(layer) + " of the base model has no experts");
        if (pair.a_shape.size() != 2 || pair.b_shape.size() != 2)
            fail("tensors '" + pair.a_name + "' and '" + pair.b_name + "' must be matrices");
        const int64_t rE = pair.a_shape[0], in = pair.a_shape[1], out = pair.b_shape[0];
        if (rE != int64_t(rank_) * E || pair.b_shape[1] != rE)
            fail("tensors '" + pair.a_name + "' " + shape_text(pair.a_shape) + " and '" + pair.b_name + "' " +
                 shape_text(pair.b_shape) + " do not have r * experts = " + std::to_string(rank_) + " * " +
                 std::to_string(E) + " rows (the base model's expert count)");
        std::vector<LoraTarget> targets;
        if (in == H && out == 2 * I)
            targets = {LoraTarget::GATE, LoraTarget::UP};
        else if (in == I && out == H)
            targets = {LoraTarget::DOWN};
        else
            fail("tensors '" + pair.a_name + "' " + shape_text(pair.a_shape) + " and '" + pair.b_name + "' " +
                 shape_text(pair.b_shape) + " match neither expert bank of layer " + std::to_string(layer) +
                 " (gate_up [" + std::to_string(2 * I) + ", " + std::to_string(H) + "], down [" + std::to_string(H) +
                 ", " + std::to_string(I) + "] per expert)");
        if (adapter.layers.empty()) adapter.layers.resize(static_cast<size_t>(config_.n_layers));
        if (adapter.experts.empty()) adapter.experts.resize(static_cast<size_t>(config_.n_layers));
        auto& banks = adapter.experts[static_cast<size_t>(layer)];
        if (banks.empty()) banks.resize(static_cast<size_t>(E));
        const int64_t r = rank_;
        for (int64_t e = 0; e < E; ++e) {
            int64_t row0 = 0;
            for (LoraTarget t : targets) {
                LoraMatrices& m = banks[static_cast<size_t>(e)][static_cast<int>(t) - static_cast<int>(LoraTarget::GATE)];
                if (m.rank > 0) fail("tensor '" + pair.a_name + "': layer " + std::to_string(layer) + "'s expert " +
                                     target_name(t) + " bank has two adapters");
                const int64_t rows = t == LoraTarget::DOWN ? H : I;
                m.rank = static_cast<int>(r);
                m.in = in;
                m.out = rows;
                m.a.assign(pair.a.begin() + e * r * in, pair.a.begin() + (e + 1) * r * in);
                m.b_scaled.assign(static_cast<size_t>(r * rows), 0.0f);
                for (int64_t o = 0; o < rows; ++o)
                    for (int64_t k = 0; k < r; ++k)
                        m.b_scaled[static_cast<size_t>(k * rows + o)] =
                            adapter.scale * pair.b[static_cast<size_t>((row0 + o) * rE + k * E + e)];
                row0 += rows;
            }
        }
        adapter.rank = std::max(adapter.rank, rank_);
    }

    const LayerWeights& layer_weights(int layer) const { return weights_.layers[static_cast<size_t>(layer)]; }
    int n_layers() const { return config_.n_layers; }

private:
    std::string name_;
    const ModelConfig& config_;
    const ModelWeights& weights_;
    int rank_ = 0;
    bool expects_experts_ = false;
    std::set<std::string> listed_modules_;
};

// The adapter `read` fills, its reader's errors as they are and any other
// (a file that cannot be read) prefixed with the adapter's name.
template <typename Read>
std::shared_ptr<const LoraAdapter> read_adapter(const std::string& name, int32_t id, const std::string& path,
                                                const ModelConfig& config, const ModelWeights& weights, Read read) {
    PeftReader reader(name, config, weights);
    auto adapter = std::make_shared<LoraAdapter>();
    adapter->name = name;
    adapter->id = id;
    adapter->path = path;
    try {
        read(reader, *adapter);
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind("LoRA adapter '", 0) == 0) throw;
        reader.fail(what);
    }
    return adapter;
}

}  // namespace

std::shared_ptr<const LoraAdapter> load_peft_adapter(const std::string& name, int32_t id, const std::string& dir,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank) {
    return read_adapter(name, id, dir, config, weights, [&](PeftReader& reader, LoraAdapter& adapter) {
        const std::string config_path = dir + "/adapter_config.json";
        if (!file_exists(config_path)) reader.fail("'" + config_path + "' does not exist (not a PEFT adapter directory)");
        reader.read_config(read_json_file(config_path), max_rank, adapter);
        const std::string tensors_path = dir + "/adapter_model.safetensors";
        if (!file_exists(tensors_path))
            reader.fail("'" + tensors_path + "' does not exist (adapter_model.bin, a pickle, is not read)");
        const SafetensorsFile file(tensors_path);
        reader.read_tensors(file, adapter);
    });
}

namespace {

// llama.cpp's LoRA GGUF names (convert_lora_to_gguf.py): the base tensor's
// name without ".weight" -> the projections its B rows cover.
std::vector<LoraTarget> gguf_targets(const std::string& kind, int64_t b_rows, const LayerWeights& w) {
    if (kind == "attn_q") return {LoraTarget::Q};
    if (kind == "attn_k") return {LoraTarget::K};
    if (kind == "attn_v") return {LoraTarget::V};
    if (kind == "attn_output") return {LoraTarget::O};
    if (kind == "attn_qkv") return {LoraTarget::Q, LoraTarget::K, LoraTarget::V};
    if (kind == "ffn_gate") return {LoraTarget::GATE};
    if (kind == "ffn_down") return {LoraTarget::DOWN};
    if (kind == "ffn_up")  // Phi-3's fused gate+up matrix is its ffn_up
        return b_rows != w.w_up.rows && b_rows == w.w_gate.rows + w.w_up.rows
                   ? std::vector<LoraTarget>{LoraTarget::GATE, LoraTarget::UP}
                   : std::vector<LoraTarget>{LoraTarget::UP};
    return {};
}

}  // namespace

std::shared_ptr<const LoraAdapter> load_gguf_adapter(const std::string& name, int32_t id, const std::string& path,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank) {
    return read_adapter(name, id, path, config, weights, [&](PeftReader& reader, LoraAdapter& adapter) {
        const GgufFile file(path);
        if (file.get_string("general.type", "") != "adapter" || file.get_string("adapter.type", "") != "lora")
            reader.fail("'" + path + "' is not a LoRA adapter GGUF (general.type 'adapter', adapter.type 'lora')");
        const std::string arch = file.get_string("general.architecture", "");
        if (arch != config.architecture)
            reader.fail("the adapter is for architecture '" + arch + "', the base model is '" + config.architecture + "'");
        const double alpha = file.get_float("adapter.lora.alpha", 0.0);
        const std::string suffix_a = ".weight.lora_a", suffix_b = ".weight.lora_b";
        auto ends_with = [](const std::string& s, const std::string& e) {
            return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
        };
        int pairs = 0;
        for (const GgufTensor& t : file.tensors()) {
            const bool is_a = ends_with(t.name, suffix_a), is_b = ends_with(t.name, suffix_b);
            if (!is_a && !is_b) reader.fail("tensor '" + t.name + "' is not a LoRA lora_a/lora_b matrix");
            const std::string stem = t.name.substr(0, t.name.size() - suffix_a.size());
            const GgufTensor* other = file.find_tensor(stem + (is_a ? suffix_b : suffix_a));
            if (other == nullptr)
                reader.fail("tensor '" + stem + (is_a ? suffix_b : suffix_a) + "' is missing (its pair '" + t.name +
                            "' is there)");
            if (is_b) continue;
            const GgufTensor& b = *other;
            if (t.dims.size() != 2 || b.dims.size() != 2)
                reader.fail("tensors '" + t.name + "' and '" + b.name + "' must be matrices");
            int layer = -1;
            std::string kind;
            if (stem.rfind("blk.", 0) == 0) {
                const size_t dot = stem.find('.', 4);
                const std::string digits = stem.substr(4, dot == std::string::npos ? 0 : dot - 4);
                if (!digits.empty() && digits.size() < 7 &&
                    digits.find_first_not_of("0123456789") == std::string::npos) {
                    layer = std::stoi(digits);
                    kind = stem.substr(dot + 1);
                }
            }
            if (layer < 0) reader.fail("tensor '" + t.name + "' is not in a decoder layer (only the layers' projections are supported)");
            if (layer >= reader.n_layers())
                reader.fail("tensor '" + t.name + "': layer " + std::to_string(layer) + " is past the base model's " +
                            std::to_string(reader.n_layers()) + " layers");
            const std::vector<LoraTarget> targets = gguf_targets(kind, b.dims[1], reader.layer_weights(layer));
            if (targets.empty())
                reader.fail("tensor '" + t.name + "': '" + kind + "' is not supported (only the attention q/k/v/o and "
                            "the MLP gate/up/down projections)");
            const int rank = static_cast<int>(t.dims[1]);
            if (pairs++ == 0) {
                if (rank < 1) reader.fail("tensor '" + t.name + "' has rank 0");
                if (rank > max_rank)
                    reader.fail("rank " + std::to_string(rank) + " is above max_lora_rank " + std::to_string(max_rank));
                reader.set_rank(rank);
                adapter.scale = static_cast<float>(alpha > 0 ? alpha / rank : 1.0);  // llama.cpp's rule
            }
            // GGUF dims are reversed: lora_a [in, rank] is A [rank][in], lora_b [rank, out] is B [out][rank].
            const std::vector<int64_t> a_shape{t.dims[1], t.dims[0]}, b_shape{b.dims[1], b.dims[0]};
            auto values = [&](const GgufTensor& x, const std::vector<int64_t>& shape) {
                const GgmlType type = static_cast<GgmlType>(x.type);
                if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::BF16)
                    reader.fail("tensor '" + x.name + "' must be F32, F16 or BF16 (got " + ggml_type_name(x.type) + ")");
                std::vector<float> out(static_cast<size_t>(shape[0] * shape[1]));
                kernels::dequantize_row(type, x.data, out.data(), shape[0] * shape[1]);
                return out;
            };
            reader.add_pair(PeftReader::Pair{t.name, a_shape, values(t, a_shape), b.name, b_shape, values(b, b_shape)},
                            layer, targets, /*checkpoint_rows=*/false, adapter);
        }
        if (pairs == 0) reader.fail("'" + path + "' has no LoRA tensors");
    });
}

std::shared_ptr<const LoraAdapter> load_lora_adapter(const std::string& name, int32_t id, const std::string& path,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank) {
    const bool gguf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
    return (gguf ? load_gguf_adapter : load_peft_adapter)(name, id, path, config, weights, max_rank);
}

}  // namespace vllm
