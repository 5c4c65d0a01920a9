#include "model/weights.h"

#include "formats/model_source.h"
#include "model/expert_preparation.h"
#include "model/weight_preparation.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>

namespace vllm {

namespace {

class TensorLoader {
public:
    explicit TensorLoader(const ModelSource& file) : file_(file) {}

    const GgufTensor* find(const std::string& name) const { return file_.find_tensor(name); }
    const ModelSource& file() const { return file_; }

    // A [rows, cols] matrix (GGUF dims {cols, rows}) in any supported type.
    kernels::QuantMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
        const GgufTensor& t = require(name);
        if (t.dims.size() != 2 || t.dims[0] != cols || t.dims[1] != rows)
            fail(name, "has shape " + shape(t) + ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (!info->supported) fail(name, "has unsupported tensor type " + ggml_type_name(t.type));
        kernels::QuantMatrix m;
        m.type = static_cast<GgmlType>(t.type);
        m.data = t.data;
        m.rows = rows;
        m.cols = cols;
        m.row_bytes = ggml_row_bytes(m.type, cols);
        return m;
    }

    // `name` is `rows` rows, each a matrix of another's rows: [rows[0], dim]
    // on top, then [rows[1], dim], ... (Phi-3's fused attn_qkv, ffn_up).
    std::vector<kernels::QuantMatrix> stacked(const std::string& name, const std::vector<int64_t>& rows,
                                              int64_t cols) const {
        int64_t total = 0;
        for (int64_t r : rows) total += r;
        const kernels::QuantMatrix whole = matrix(name, total, cols);
        std::vector<kernels::QuantMatrix> parts;
        int64_t first = 0;
        for (int64_t r : rows) {
            kernels::QuantMatrix part = whole;
            part.data = whole.data + size_t(first) * whole.row_bytes;
            part.rows = r;
            parts.push_back(part);
            first += r;
        }
        return parts;
    }

    // Each of `experts` experts' [rows, cols] matrix of layer prefix `p`'s
    // `kind` (ffn_gate, ffn_up, ffn_down), as views into the file: slices of
    // the stacked `p + kind + "_exps.weight"` (GGUF dims {cols, rows,
    // experts}, as llama.cpp's converter writes it), else the per-expert
    // `p + kind + ".E.weight"` matrices (a Hugging Face checkpoint, older
    // Mixtral GGUFs). `first_row` picks rows of a stacked tensor holding
    // more per expert (Granite's fused gate and up: ffn_gate_up_exps).
    std::vector<kernels::QuantMatrix> experts(const std::string& p, const std::string& kind, int64_t experts,
                                              int64_t rows, int64_t cols, int64_t stacked_rows = 0,
                                              int64_t first_row = 0) const {
        const std::string stacked = p + kind + "_exps.weight";
        if (find(stacked) != nullptr)
            return slices(stacked, experts, rows, cols, stacked_rows == 0 ? rows : stacked_rows, first_row,
                          "the metadata's expert count and expert feed-forward length");
        std::vector<kernels::QuantMatrix> out;
        if (find(p + kind + ".0.weight") == nullptr) fail(stacked, "is missing (and so are the per-expert tensors)");
        for (int64_t e = 0; e < experts; ++e) out.push_back(matrix(p + kind + "." + std::to_string(e) + ".weight", rows, cols));
        if (find(p + kind + "." + std::to_string(experts) + ".weight") != nullptr)
            fail(p + kind + "." + std::to_string(experts) + ".weight",
                 "exists, but the metadata's expert count is " + std::to_string(experts));
        return out;
    }

    // The `n` [rows, cols] matrices of 3-D tensor `name` (GGUF dims {cols,
    // stacked_rows, n}), as views: matrix i is rows first_row.. of slice i.
    // `meaning` says which metadata gave the expected shape.
    std::vector<kernels::QuantMatrix> slices(const std::string& name, int64_t n, int64_t rows, int64_t cols,
                                             int64_t stacked_rows, int64_t first_row, const std::string& meaning) const {
        const GgufTensor& t = require(name);
        if (t.dims.size() != 3 || t.dims[0] != cols || t.dims[1] != stacked_rows || t.dims[2] != n)
            fail(name, "has shape " + shape(t) + ", expected [" + std::to_string(cols) + ", " +
                           std::to_string(stacked_rows) + ", " + std::to_string(n) + "] (" + meaning + ")");
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (!info->supported) fail(name, "has unsupported tensor type " + ggml_type_name(t.type));
        kernels::QuantMatrix m;
        m.type = static_cast<GgmlType>(t.type);
        m.rows = rows;
        m.cols = cols;
        m.row_bytes = ggml_row_bytes(m.type, cols);
        if (t.nbytes != m.row_bytes * size_t(stacked_rows * n)) fail(name, "has the wrong byte size");
        std::vector<kernels::QuantMatrix> out;
        for (int64_t i = 0; i < n; ++i) {
            m.data = t.data + size_t(i * stacked_rows + first_row) * m.row_bytes;
            out.push_back(m);
        }
        return out;
    }

    // A vector of n elements, expanded to float.
    std::vector<float> vector(const std::string& name, int64_t n) const {
        const GgufTensor& t = require(name);
        if (t.elements() != n) fail(name, "has " + std::to_string(t.elements()) + " elements, expected " + std::to_string(n));
        return floats(name, t, n);
    }

    // A bias per expert: [experts][rows] (GGUF dims {rows, experts}), as floats.
    std::vector<float> expert_bias(const std::string& name, int64_t experts, int64_t rows) const {
        const GgufTensor& t = require(name);
        if (t.dims.size() != 2 || t.dims[0] != rows || t.dims[1] != experts)
            fail(name, "has shape " + shape(t) + ", expected [" + std::to_string(rows) + ", " + std::to_string(experts) +
                           "] (the metadata's expert feed-forward length or embedding length, and expert count)");
        return floats(name, t, rows * experts);
    }

    // RoPE frequency divisors: n positive floats.
    std::vector<float> rope_divisors(const std::string& name, int64_t n) const {
        std::vector<float> out = vector(name, n);
        for (float f : out)
            if (!(f > 0.0f)) fail(name, "has a non-positive factor");
        return out;
    }

    [[noreturn]] void fail(const std::string& name, const std::string& why) const {
        throw_model_load("cannot load '" + file_.path() + "': tensor '" + name + "' " + why);
    }

private:
    // t's first n elements, expanded to float.
    std::vector<float> floats(const std::string& name, const GgufTensor& t, int64_t n) const {
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (!info->supported) fail(name, "has unsupported tensor type " + ggml_type_name(t.type));
        std::vector<float> out(static_cast<size_t>(n));
        kernels::dequantize_row(static_cast<GgmlType>(t.type), t.data, out.data(), n);
        return out;
    }
    const GgufTensor& require(const std::string& name) const {
        const GgufTensor* t = file_.find_tensor(name);
        if (t == nullptr) fail(name, "is missing");
        return *t;
    }
    static std::string shape(const GgufTensor& t) {
        std::string s = "[";
        for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
        return s + "]";
    }

    const ModelSource& file_;
};

// A mixture-of-experts layer's feed-forward tensors (config.n_experts > 0):
// the router, the experts and the shared expert with its gate.
void load_experts(const TensorLoader& load, const std::string& p, ModelConfig& config, LayerWeights& l) {
    const int64_t dim = config.dim, n = config.n_experts, ffn = config.expert_ffn_dim;
    if (load.find(p + "ffn_gate_inp.weight") == nullptr)
        load.fail(p + "ffn_gate_inp.weight", "(the router of a model with " + std::to_string(n) + " experts) is missing");
    l.router = load.matrix(p + "ffn_gate_inp.weight", n, dim);
    if (load.find(p + "ffn_gate_up_exps.weight") != nullptr) {  // Granite: gate rows, then up rows, per expert
        l.expert_gate = load.experts(p, "ffn_gate_up", n, ffn, dim, 2 * ffn, 0);
        l.expert_up = load.experts(p, "ffn_gate_up", n, ffn, dim, 2 * ffn, ffn);
    } else {
        l.expert_gate = load.experts(p, "ffn_gate", n, ffn, dim);
        l.expert_up = load.experts(p, "ffn_up", n, ffn, dim);
    }
    l.expert_down = load.experts(p, "ffn_down", n, dim, ffn);
    l.lazy_experts = LazyExperts::create(l.expert_gate, l.expert_up, l.expert_down, &load.file());
    if (config.traits.expert_bias) {
        l.router_bias = load.vector(p + "ffn_gate_inp.bias", n);
        l.expert_gate_bias = load.expert_bias(p + "ffn_gate_exps.bias", n, ffn);
        l.expert_up_bias = load.expert_bias(p + "ffn_up_exps.bias", n, ffn);
        l.expert_down_bias = load.expert_bias(p + "ffn_down_exps.bias", n, dim);
    }
    const GgufTensor* shared = load.find(p + "ffn_up_shexp.weight");
    if (shared == nullptr) {
        if (config.shared_expert_ffn_dim > 0) load.fail(p + "ffn_up_shexp.weight", "(the shared expert) is missing");
        return;
    }
    // llama.cpp's Qwen2-MoE reads the shared expert's length from the tensor
    // when the metadata has none.
    if (config.shared_expert_ffn_dim == 0 && shared->dims.size() == 2)
        config.shared_expert_ffn_dim = static_cast<int>(shared->dims[1]);
    const int64_t shared_ffn = config.shared_expert_ffn_dim;
    l.w_gate = load.matrix(p + "ffn_gate_shexp.weight", shared_ffn, dim);
    l.w_up = load.matrix(p + "ffn_up_shexp.weight", shared_ffn, dim);
    l.w_down = load.matrix(p + "ffn_down_shexp.weight", dim, shared_ffn);
    if (load.find(p + "ffn_gate_inp_shexp.weight")) l.shared_expert_gate = load.vector(p + "ffn_gate_inp_shexp.weight", dim);
}

// A latent attention layer's tensors (config.is_mla(); LayerWeights).
void load_latent_attention(const TensorLoader& load, const std::string& p, const ModelConfig& c, LayerWeights& l) {
    const int64_t dim = c.dim, heads = c.n_heads, q_head = c.qk_nope_dim + c.rope_dim, kv_lora = c.kv_lora_rank;
    if (c.q_lora_rank > 0) {
        l.wq_a = load.matrix(p + "attn_q_a.weight", c.q_lora_rank, dim);
        l.q_a_norm = load.vector(p + "attn_q_a_norm.weight", c.q_lora_rank);
        l.wq_b = load.matrix(p + "attn_q_b.weight", heads * q_head, c.q_lora_rank);
    } else {
        l.wq = load.matrix(p + "attn_q.weight", heads * q_head, dim);
    }
    l.wkv_a = load.matrix(p + "attn_kv_a_mqa.weight", kv_lora + c.rope_dim, dim);
    l.kv_a_norm = load.vector(p + "attn_kv_a_norm.weight", kv_lora);
    if (load.find(p + "attn_k_b.weight") == nullptr && load.find(p + "attn_kv_b.weight") != nullptr)
        load.fail(p + "attn_kv_b.weight", "(an older converter's unsplit form) is not supported: convert the model "
                                          "again with a llama.cpp converter that writes attn_k_b and attn_v_b");
    const std::string meaning = "the metadata's kv_lora_rank, key_length_mla - rope dimension, value_length_mla "
                                "and head count";
    l.k_b = load.slices(p + "attn_k_b.weight", heads, kv_lora, c.qk_nope_dim, kv_lora, 0, meaning);
    l.v_b = load.slices(p + "attn_v_b.weight", heads, c.v_head_dim, kv_lora, c.v_head_dim, 0, meaning);
    l.wo = load.matrix(p + "attn_output.weight", dim, heads * c.v_head_dim);
}

// A Qwen3.5 linear-attention layer's tensors (llama.cpp's names; a layer the
// pattern calls linear but which holds full attention's tensors instead, or
// lacks one of these, is refused naming the tensor and the pattern).
void load_linear_attention(const TensorLoader& load, const std::string& p, const ModelConfig& c, LayerWeights& l) {
    const int64_t dim = c.dim, channels = c.linear_conv_channels(), value_dim = int64_t(c.linear_v_heads) * c.linear_head_dim;
    const std::string why = "(a linear-attention layer by the metadata's layer pattern, attention.recurrent_layers) is missing";
    for (const char* name : {"attn_qkv.weight", "attn_gate.weight", "ssm_conv1d.weight", "ssm_a", "ssm_dt.bias",
                             "ssm_beta.weight", "ssm_alpha.weight", "ssm_norm.weight", "ssm_out.weight"})
        if (load.find(p + name) == nullptr) load.fail(p + name, why);
    l.w_linear_qkv = load.matrix(p + "attn_qkv.weight", channels, dim);
    l.w_linear_z = load.matrix(p + "attn_gate.weight", value_dim, dim);
    l.w_beta = load.matrix(p + "ssm_beta.weight", c.linear_v_heads, dim);
    l.w_alpha = load.matrix(p + "ssm_alpha.weight", c.linear_v_heads, dim);
    l.w_linear_out = load.matrix(p + "ssm_out.weight", dim, value_dim);
    l.conv1d = load.vector(p + "ssm_conv1d.weight", channels * c.conv_kernel);
    l.ssm_a = load.vector(p + "ssm_a", c.linear_v_heads);
    l.ssm_dt = load.vector(p + "ssm_dt.bias", c.linear_v_heads);
    l.ssm_norm = load.vector(p + "ssm_norm.weight", c.linear_head_dim);
}

// An encoder's second token type and its classification head, when it has
// them (a cross-encoder): the head's tensors as llama.cpp names them.
void load_token_type_and_classifier(const TensorLoader& load, const ModelConfig& c, const GgufTensor& types,
                                    ModelWeights& w) {
    const int64_t dim = c.dim;
    if (types.dims[1] >= 2) {
        w.token_type_second_row.resize(dim);
        const size_t row_bytes = types.nbytes / static_cast<size_t>(types.dims[1]);
        kernels::dequantize_row(static_cast<GgmlType>(types.type), types.data + row_bytes,
                                w.token_type_second_row.data(), dim);
    }
    const GgufTensor* out = load.find("cls.output.weight");
    if (out == nullptr) {
        if (load.find("cls.weight") != nullptr) load.fail("cls.output.weight", "is missing (cls.weight is there)");
        return;
    }
    if (out->dims.size() != 2 || out->dims[0] != dim || out->dims[1] < 1)
        load.fail("cls.output.weight", "is not a [" + std::to_string(dim) + ", labels] matrix");
    const int64_t labels = out->dims[1];
    w.classifier_out = load.matrix("cls.output.weight", labels, dim);
    w.classifier_out_bias = load.find("cls.output.bias") ? load.vector("cls.output.bias", labels)
                                                          : std::vector<float>(labels, 0.0f);
    if (load.find("cls.weight") == nullptr) return;
    w.classifier = load.matrix("cls.weight", dim, dim);
    w.classifier_bias = load.find("cls.bias") ? load.vector("cls.bias", dim) : std::vector<float>(dim, 0.0f);
}

// An encoder's (config.traits.encoder: BERT, llama.cpp's tensor names)
// embeddings and layers; it has no output head.
void load_encoder(const TensorLoader& load, const ModelConfig& c, ModelWeights& w) {
    const int64_t dim = c.dim, ffn = c.ffn_dim;
    w.position_embedding = load.matrix("position_embd.weight", c.context_length, dim);
    const GgufTensor* types = load.find("token_types.weight");
    if (types == nullptr || types->dims.size() != 2 || types->dims[0] != dim || types->dims[1] < 1)
        load.fail("token_types.weight", "is missing or not a [" + std::to_string(dim) + ", types] matrix");
    w.token_type_row.resize(dim);
    kernels::dequantize_row(static_cast<GgmlType>(types->type), types->data, w.token_type_row.data(), dim);
    load_token_type_and_classifier(load, c, *types, w);
    w.embedding_norm = load.vector("token_embd_norm.weight", dim);
    w.embedding_norm_bias = load.vector("token_embd_norm.bias", dim);
    w.layers.resize(c.n_layers);
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = w.layers[i];
        l.wq = load.matrix(p + "attn_q.weight", dim, dim);
        l.wk = load.matrix(p + "attn_k.weight", dim, dim);
        l.wv = load.matrix(p + "attn_v.weight", dim, dim);
        l.wo = load.matrix(p + "attn_output.weight", dim, dim);
        l.bq = load.vector(p + "attn_q.bias", dim);
        l.bk = load.vector(p + "attn_k.bias", dim);
        l.bv = load.vector(p + "attn_v.bias", dim);
        l.bo = load.vector(p + "attn_output.bias", dim);
        l.attn_norm = load.vector(p + "attn_output_norm.weight", dim);
        l.attn_norm_bias = load.vector(p + "attn_output_norm.bias", dim);
        l.w_up = load.matrix(p + "ffn_up.weight", ffn, dim);
        l.up_bias = load.vector(p + "ffn_up.bias", ffn);
        l.w_down = load.matrix(p + "ffn_down.weight", dim, ffn);
        l.down_bias = load.vector(p + "ffn_down.bias", dim);
        l.ffn_norm = load.vector(p + "layer_output_norm.weight", dim);
        l.ffn_norm_bias = load.vector(p + "layer_output_norm.bias", dim);
    }
}

}  // namespace

ModelWeights ModelWeights::from_source(const ModelSource& file, ModelConfig& config, int threads) {
    TensorLoader load(file);
    const GgufTensor* embd = load.find("token_embd.weight");
    if (embd == nullptr || embd->dims.size() != 2)
        throw_model_load("cannot load '" + file.path() + "': tensor 'token_embd.weight' is missing or not a matrix");
    config.vocab_size = static_cast<int>(embd->dims[1]);

    const int64_t dim = config.dim;
    ModelWeights w;
    w.token_embedding = load.matrix("token_embd.weight", config.vocab_size, dim);
    if (config.traits.encoder) {
        load_encoder(load, config, w);
        std::vector<kernels::QuantMatrix*> matrices;
        for (LayerWeights& l : w.layers)
            for (kernels::QuantMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_up, &l.w_down}) matrices.push_back(m);
        for (kernels::QuantMatrix* m : {&w.classifier, &w.classifier_out})
            if (m->data != nullptr) matrices.push_back(m);
        prepare_matrices(matrices, w.prepared, file);
        return w;
    }
    w.output_norm = load.vector("output_norm.weight", dim);
    w.output = load.find("output.weight") ? load.matrix("output.weight", config.vocab_size, dim) : w.token_embedding;
    if (load.find("rope_freqs.weight")) {
        if (config.longrope_original_context > 0)
            throw_model_load("cannot load '" + file.path() +
                             "': tensor 'rope_freqs.weight' and LongRoPE factor tensors in one model");
        // Gemma 4: its full layers' (proportional RoPE over the whole head).
        w.rope_freqs = load.rope_divisors("rope_freqs.weight", config.rope_dim / 2);
    }
    if (config.longrope_original_context > 0) {
        w.rope_factors_long = load.rope_divisors("rope_factors_long.weight", config.rope_dim / 2);
        w.rope_factors_short = load.rope_divisors("rope_factors_short.weight", config.rope_dim / 2);
    }
    const int64_t per_layer = config.per_layer_embd_dim, all_layers = per_layer * config.n_layers;
    if (per_layer > 0) {
        w.per_layer_token_embd = load.matrix("per_layer_token_embd.weight", config.vocab_size, all_layers);
        w.per_layer_model_proj = load.matrix("per_layer_model_proj.weight", all_layers, dim);
        w.per_layer_proj_norm = load.vector("per_layer_proj_norm.weight", per_layer);
    }
    w.layers.resize(config.n_layers);
    for (int i = 0; i < config.n_layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = w.layers[i];
        const int64_t head_dim = config.head_dim_of(i), q_dim = int64_t(config.n_heads) * head_dim,
                      kv_dim = int64_t(config.kv_heads_of(i)) * head_dim, ffn = config.ffn_dim_of(i);
        const bool own_kv = config.kv_source_of(i) == i;
        // OLMo 2 has no pre-norms (empty: the sublayer reads x as is, decoder.h).
        if (config.traits.pre_norms) l.attn_norm = load.vector(p + "attn_norm.weight", dim);
        if (config.is_recurrent(i)) {
            load_linear_attention(load, p, config, l);
        } else if (config.is_mla()) {
            load_latent_attention(load, p, config, l);
        } else if (!own_kv || (config.value_norm && load.find(p + "attn_v.weight") == nullptr)) {
            // Gemma 4: a KV-sharing layer projects queries only; a K=V layer
            // (attention_k_eq_v) reads its values from the k projection.
            l.wq = load.matrix(p + "attn_q.weight", q_dim, dim);
            if (own_kv) l.wk = load.matrix(p + "attn_k.weight", kv_dim, dim);
            l.values_are_keys = own_kv;
        } else if (!config.has_recurrent_layers() && load.find(p + "attn_qkv.weight")) {  // Phi-3's fused q/k/v
            const auto qkv = load.stacked(p + "attn_qkv.weight", {q_dim, kv_dim, kv_dim}, dim);
            l.wq = qkv[0], l.wk = qkv[1], l.wv = qkv[2];
        } else {
            if (config.has_recurrent_layers() && load.find(p + "attn_q.weight") == nullptr)
                load.fail(p + "attn_q.weight",
                          "(a full-attention layer by the metadata's layer pattern, attention.recurrent_layers) is missing");
            l.wq = load.matrix(p + "attn_q.weight", config.attn_output_gate ? 2 * q_dim : q_dim, dim);
            l.wk = load.matrix(p + "attn_k.weight", kv_dim, dim);
            l.wv = load.matrix(p + "attn_v.weight", kv_dim, dim);
        }
        if (!config.is_mla() && !config.is_recurrent(i)) l.wo = load.matrix(p + "attn_output.weight", dim, q_dim);
        if (config.traits.output_bias) l.bo = load.vector(p + "attn_output.bias", dim);
        if (config.traits.attn_sinks) l.attn_sinks = load.vector(p + "attn_sinks.weight", config.n_heads);
        if (config.traits.qkv_bias) {
            l.bq = load.vector(p + "attn_q.bias", q_dim);
            l.bk = load.vector(p + "attn_k.bias", kv_dim);
            l.bv = load.vector(p + "attn_v.bias", kv_dim);
        }
        if (config.traits.qk_norm && !config.is_recurrent(i)) {
            // OLMoE normalises the whole projection, the others each head.
            l.q_norm = load.vector(p + "attn_q_norm.weight", config.traits.qk_norm_whole ? q_dim : head_dim);
            if (own_kv) l.k_norm = load.vector(p + "attn_k_norm.weight", config.traits.qk_norm_whole ? kv_dim : head_dim);
        }
        if (config.traits.pre_norms) l.ffn_norm = load.vector(p + config.traits.ffn_norm_tensor + ".weight", dim);
        if (config.is_moe_layer(i)) {
            load_experts(load, p, config, l);
        } else {
            if (load.find(p + "ffn_gate.weight")) {
                l.w_gate = load.matrix(p + "ffn_gate.weight", ffn, dim);
                l.w_up = load.matrix(p + "ffn_up.weight", ffn, dim);
            } else {  // llama.cpp keeps a fused gate and up projection as ffn_up: gate rows first
                const auto gate_up = load.stacked(p + "ffn_up.weight", {ffn, ffn}, dim);
                l.w_gate = gate_up[0], l.w_up = gate_up[1];
            }
            l.w_down = load.matrix(p + "ffn_down.weight", dim, ffn);
        }
        if (config.traits.post_norms) {
            l.post_attn_norm = load.vector(p + "post_attention_norm.weight", dim);
            l.post_ffn_norm = load.vector(p + "post_ffw_norm.weight", dim);
        }
        if (load.find(p + "layer_output_scale.weight")) l.output_scale = load.vector(p + "layer_output_scale.weight", 1);
        if (per_layer > 0) {
            l.per_layer_gate = load.matrix(p + "inp_gate.weight", per_layer, dim);
            l.per_layer_proj = load.matrix(p + "proj.weight", dim, per_layer);
            l.per_layer_post_norm = load.vector(p + "post_norm.weight", dim);
        }
    }
    // Every layer matrix and the output matrix get a copy (prepared, that
    // is rearranged, where the kernels read another layout) in
    // `prepared`'s huge pages (model/weight_preparation.h). The token
    // embedding is read a few rows a step (dequantize_row), so it stays in
    // the file; a tied output matrix gets its own copy, and the
    // embedding's pages are released with it: a step looks up only a few
    // rows, which fault back in one page each (Gemma 3 270M: 178 MB of
    // embedding would otherwise stay resident beside its copy).
    std::vector<kernels::QuantMatrix*> matrices;
    for (LayerWeights& l : w.layers)
        for (kernels::QuantMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router,
                                        &l.per_layer_gate, &l.per_layer_proj, &l.wq_a, &l.wq_b, &l.wkv_a,
                                        &l.w_linear_qkv, &l.w_linear_z, &l.w_beta, &l.w_alpha, &l.w_linear_out})
            matrices.push_back(m);
    matrices.push_back(&w.output);
    matrices.push_back(&w.per_layer_model_proj);
    prepare_matrices(matrices, w.prepared, file, threads);
    return w;
}

}  // namespace vllm
