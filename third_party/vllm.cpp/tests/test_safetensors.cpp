// The safetensors reader and the Hugging Face directory source on files
// written here: tensors read in place in their stored type, every header
// lie refused naming the file and the problem (truncation, offsets past the
// end or out of order, shape x dtype against the byte range, overlaps,
// dtypes we do not compute), and a directory translated into GGUF keys and
// llama.cpp names (shards, tied embeddings, Gemma's 1 + w norms, Llama 3
// RoPE factors, the halves RoPE style model_config then uses).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "formats/hf_model.h"
#include "formats/hf_tokenizer_config.h"
#include "formats/safetensors_file.h"
#include "model/model_config.h"
#include "util/error.h"
#include "check.h"

using namespace vllm;

namespace {

// Runs `load`; passes when it throws a MODEL_LOAD error whose message holds
// every one of `parts`.
void check_refused(const std::string& what, const std::function<void()>& load, const std::vector<std::string>& parts) {
    try {
        load();
        check(false, what + ": loaded, expected an error");
    } catch (const Error& e) {
        bool all = e.status() == VLLM_ERR_MODEL_LOAD;
        for (const std::string& p : parts) all = all && std::string(e.what()).find(p) != std::string::npos;
        check(all, what + ": got '" + e.what() + "'");
    }
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Entry {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};

std::string shape_json(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

// A safetensors file of `entries` laid out back to back; `header_override`,
// when given, replaces the generated header text.
std::string safetensors_bytes(const std::vector<Entry>& entries, const std::string& header_override = "") {
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}", data;
    for (const Entry& e : entries) {
        header += ",\"" + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":" + shape_json(e.shape) +
                  ",\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + e.bytes.size()) + "]}";
        data += e.bytes;
    }
    header += "}";
    if (!header_override.empty()) header = header_override;
    while (header.size() % 8 != 0) header += ' ';
    const uint64_t n = header.size();
    std::string out(reinterpret_cast<const char*>(&n), 8);
    return out + header + data;
}

std::string floats(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// bfloat16 of small integers and halves is exact: the top 16 bits of the float.
std::string bf16(const std::vector<float>& v) {
    std::string out;
    for (float f : v) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        out.append(reinterpret_cast<const char*>(&h), 2);
    }
    return out;
}

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
    return v;
}

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/test_safetensors.XXXXXX";
        path_ = mkdtemp(tmpl);
    }
    ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

void test_reader(const TempDir& dir) {
    const std::string path = dir / "ok.safetensors";
    write_file(path, safetensors_bytes({{"a", "F32", {2, 3}, floats(ramp(6))}, {"b", "BF16", {4}, bf16({1, 2, 3, 4})},
                                        {"c", "F16", {2}, std::string("\x00\x3c\x00\x40", 4)}}));
    SafetensorsFile f(path);
    check(f.tensors().size() == 3, "three tensors");
    check(f.metadata().at("format") == "pt", "__metadata__ read");
    const SafetensorsTensor& a = f.tensors()[0];
    check(a.name == "a" && a.type == GgmlType::F32 && a.shape == std::vector<int64_t>{2, 3} && a.nbytes == 24,
          "F32 tensor described");
    float a5;
    std::memcpy(&a5, a.data + 20, 4);
    check(a5 == ramp(6)[5], "F32 data read in place");
    check(f.tensors()[1].type == GgmlType::BF16 && f.tensors()[1].nbytes == 8, "BF16 kept as stored");
    check(f.tensors()[2].type == GgmlType::F16, "F16 kept as stored");
    check(f.holds(a.data) && !f.holds(reinterpret_cast<const uint8_t*>(&a5)), "holds() knows its mapping");
}

void test_reader_refusals(const TempDir& dir) {
    const auto refused = [&](const std::string& what, const std::string& bytes, const std::vector<std::string>& parts) {
        const std::string path = dir / "bad.safetensors";
        write_file(path, bytes);
        std::vector<std::string> all = parts;
        all.push_back(path);
        check_refused(what, [&] { SafetensorsFile f(path); }, all);
    };
    const std::string good = safetensors_bytes({{"w", "F32", {4, 4}, floats(ramp(16))}});
    refused("no header length", std::string("\x10\x00", 2), {"truncated"});
    refused("header past the end", good.substr(0, 20), {"truncated", "header"});
    refused("data cut short", good.substr(0, good.size() - 8), {"tensor 'w'", "past the end"});
    std::string huge = good;
    huge[5] = 0x7f;
    refused("implausible header length", huge, {"header length", "implausible"});
    refused("header not JSON", safetensors_bytes({}, "{\"w\": [1, 2"), {"not valid JSON"});
    refused("offsets out of order",
            safetensors_bytes({}, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}") + std::string(8, '\0'),
            {"tensor 'w'", "out of order"});
    refused("shape larger than the range",
            safetensors_bytes({}, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[0,32]}}") + std::string(64, '\0'),
            {"tensor 'w'", "64 bytes", "span 32"});
    refused("overlapping tensors",
            safetensors_bytes({}, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                                  "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}") + std::string(24, '\0'),
            {"'a' and 'b' overlap"});
    refused("negative dimension",
            safetensors_bytes({}, "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}") + std::string(4, '\0'),
            {"tensor 'w'", "bad dimension"});
    for (const char* dtype : {"F8_E4M3", "I8", "I32", "F64"})
        refused(std::string("dtype ") + dtype, safetensors_bytes({{"w", dtype, {8}, std::string(64, '\0')}}),
                {"tensor 'w'", std::string("dtype ") + dtype, "does not compute"});
    check_refused("missing file", [&] { SafetensorsFile f(dir / "absent.safetensors"); }, {"absent.safetensors"});
}

// A one-layer Llama-shaped checkpoint: dim 64, 2 heads of 32, 1 KV head, ffn 96, vocab 16.
std::vector<Entry> tiny_llama(bool with_lm_head) {
    const int64_t dim = 64, kv = 32, ffn = 96, vocab = 16;
    std::vector<Entry> e = {
        {"model.embed_tokens.weight", "BF16", {vocab, dim}, bf16(ramp(vocab * dim))},
        {"model.norm.weight", "BF16", {dim}, bf16(std::vector<float>(dim, 0.5f))},
        {"model.layers.0.input_layernorm.weight", "BF16", {dim}, bf16(std::vector<float>(dim, 0.5f))},
        {"model.layers.0.post_attention_layernorm.weight", "BF16", {dim}, bf16(std::vector<float>(dim, 0.5f))},
        {"model.layers.0.self_attn.q_proj.weight", "BF16", {dim, dim}, bf16(ramp(dim * dim))},
        {"model.layers.0.self_attn.k_proj.weight", "BF16", {kv, dim}, bf16(ramp(kv * dim))},
        {"model.layers.0.self_attn.v_proj.weight", "BF16", {kv, dim}, bf16(ramp(kv * dim))},
        {"model.layers.0.self_attn.o_proj.weight", "BF16", {dim, dim}, bf16(ramp(dim * dim))},
        {"model.layers.0.mlp.gate_proj.weight", "BF16", {ffn, dim}, bf16(ramp(ffn * dim))},
        {"model.layers.0.mlp.up_proj.weight", "BF16", {ffn, dim}, bf16(ramp(ffn * dim))},
        {"model.layers.0.mlp.down_proj.weight", "BF16", {dim, ffn}, bf16(ramp(ffn * dim))},
    };
    if (with_lm_head) e.push_back({"lm_head.weight", "BF16", {vocab, dim}, bf16(ramp(vocab * dim))});
    return e;
}

std::string llama_config(const std::string& cls, const std::string& extra) {
    return "{\"architectures\":[\"" + cls + "\"],\"hidden_size\":64,\"num_hidden_layers\":1,\"intermediate_size\":96,"
           "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"max_position_embeddings\":256,\"rms_norm_eps\":1e-6,"
           "\"rope_theta\":500000.0,\"vocab_size\":16" + extra + "}";
}

void test_directory(const TempDir& root) {
    const std::string dir = root / "llama";
    ::mkdir(dir.c_str(), 0755);
    write_file(dir + "/config.json", llama_config("LlamaForCausalLM", ",\"tie_word_embeddings\":true,"
               "\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":32.0,\"low_freq_factor\":1.0,"
               "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192}"));
    write_file(dir + "/model.safetensors", safetensors_bytes(tiny_llama(/*with_lm_head=*/true)));
    HfModel model(dir);
    check(model.get_string("general.architecture", "") == "llama", "architecture from the class name");
    check(model.get_int("llama.embedding_length", 0) == 64 && model.get_int("llama.attention.head_count_kv", 0) == 1 &&
              model.get_int("llama.context_length", 0) == 256,
          "hyperparameters under GGUF keys");
    check(model.get_float("llama.rope.freq_base", 0) == 500000.0, "rope_theta -> rope.freq_base");
    const GgufTensor* q = model.find_tensor("blk.0.attn_q.weight");
    check(q != nullptr && q->dims == std::vector<int64_t>{64, 64} && q->type == static_cast<uint32_t>(GgmlType::BF16),
          "q_proj -> blk.0.attn_q.weight, BF16 as stored");
    const GgufTensor* k = model.find_tensor("blk.0.attn_k.weight");
    check(k != nullptr && k->dims == std::vector<int64_t>{64, 32}, "dims listed contiguous first");
    check(model.find_tensor("output.weight") == nullptr, "tied: lm_head dropped, the embedding serves");
    const GgufTensor* freqs = model.find_tensor("rope_freqs.weight");
    check(freqs != nullptr && freqs->elements() == 16, "llama3 rope_scaling -> rope_freqs.weight");
    if (freqs != nullptr) {
        const float* f = reinterpret_cast<const float*>(freqs->data);
        check(f[0] == 1.0f && f[15] == 32.0f, "llama3 factors: high frequencies kept, low ones divided by factor");
    }
    ModelConfig config = ModelConfig::from_source(model);
    check(config.traits.rope_style == RopeStyle::HALVES, "HF q/k rows: RoPE rotates halves");
    check(config.head_dim == 32 && config.n_kv_heads == 1, "model config from the HF source");

    // Untied without lm_head: refused rather than silently tied.
    write_file(dir + "/config.json", llama_config("LlamaForCausalLM", ",\"tie_word_embeddings\":false"));
    write_file(dir + "/model.safetensors", safetensors_bytes(tiny_llama(false)));
    check_refused("untied without lm_head", [&] { HfModel m(dir); }, {dir, "lm_head.weight", "tie_word_embeddings"});
    write_file(dir + "/model.safetensors", safetensors_bytes(tiny_llama(true)));
    HfModel untied(dir);
    check(untied.find_tensor("output.weight") != nullptr, "untied: lm_head -> output.weight");

    write_file(dir + "/config.json", llama_config("FancyForCausalLM", ""));
    check_refused("unknown architecture", [&] { HfModel m(dir); }, {dir, "'FancyForCausalLM'", "LlamaForCausalLM"});
    write_file(dir + "/config.json", llama_config("LlamaForCausalLM", ",\"hidden_size\":\"big\""));
    check_refused("wrong config type", [&] { HfModel m(dir); }, {"'hidden_size'", "not an integer"});
    write_file(dir + "/config.json", "{\"architectures\": [");
    check_refused("config.json not JSON", [&] { HfModel m(dir); }, {dir + "/config.json", "not valid JSON"});

    write_file(dir + "/config.json", llama_config("LlamaForCausalLM", ""));
    std::vector<Entry> extra = tiny_llama(true);
    extra.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {16}, floats(ramp(16))});
    extra.push_back({"model.layers.0.mystery.weight", "F32", {4}, floats(ramp(4))});
    write_file(dir + "/model.safetensors", safetensors_bytes(extra));
    check_refused("unmapped tensor", [&] { HfModel m(dir); }, {"'model.layers.0.mystery.weight'", "LlamaForCausalLM"});

    const std::string empty = root / "empty";
    ::mkdir(empty.c_str(), 0755);
    check_refused("no config.json", [&] { HfModel m(empty); }, {empty, "config.json is missing"});
}

void test_shards(const TempDir& root) {
    const std::string dir = root / "sharded";
    ::mkdir(dir.c_str(), 0755);
    write_file(dir + "/config.json", llama_config("LlamaForCausalLM", ",\"tie_word_embeddings\":true"));
    std::vector<Entry> all = tiny_llama(false), first(all.begin(), all.begin() + 5), second(all.begin() + 5, all.end());
    write_file(dir + "/model-00001-of-00002.safetensors", safetensors_bytes(first));
    write_file(dir + "/model-00002-of-00002.safetensors", safetensors_bytes(second));
    std::string map = "{\"metadata\":{},\"weight_map\":{";
    for (size_t i = 0; i < all.size(); ++i)
        map += std::string(i ? "," : "") + "\"" + all[i].name + "\":\"model-0000" + (i < 5 ? "1" : "2") + "-of-00002.safetensors\"";
    write_file(dir + "/model.safetensors.index.json", map + "}}");
    HfModel model(dir);
    check(model.find_tensor("token_embd.weight") != nullptr && model.find_tensor("blk.0.ffn_down.weight") != nullptr,
          "tensors from both shards");
    ModelConfig config = ModelConfig::from_source(model);
    check(config.n_layers == 1, "sharded model config");

    ::unlink((dir + "/model-00002-of-00002.safetensors").c_str());
    check_refused("missing shard", [&] { HfModel m(dir); }, {"model-00002-of-00002.safetensors", "missing"});
    write_file(dir + "/model.safetensors.index.json", "{\"weight_map\":{\"x\":\"../elsewhere.safetensors\"}}");
    check_refused("shard outside the directory", [&] { HfModel m(dir); }, {"not a file in the directory"});
}

void test_gemma_norms(const TempDir& root) {
    const std::string dir = root / "gemma";
    ::mkdir(dir.c_str(), 0755);
    write_file(dir + "/config.json", llama_config("GemmaForCausalLM", ",\"head_dim\":32"));
    write_file(dir + "/model.safetensors", safetensors_bytes(tiny_llama(false)));
    HfModel model(dir);
    const GgufTensor* norm = model.find_tensor("blk.0.attn_norm.weight");
    check(norm != nullptr && norm->type == static_cast<uint32_t>(GgmlType::F32) &&
              reinterpret_cast<const float*>(norm->data)[0] == 1.5f,
          "Gemma norm weights presented as 1 + w");
    check(model.find_tensor("blk.0.attn_q.weight")->type == static_cast<uint32_t>(GgmlType::BF16),
          "Gemma matrices untouched");
    check(model.get_int("gemma.attention.value_length", 0) == 32, "head_dim -> key and value length");
}

// Gemma 3 as a multimodal checkpoint: the text model's settings under
// text_config, its tensors under either transformers prefix, the vision
// tower's tensors left alone.
void test_multimodal_text_model(const TempDir& root) {
    const std::string dir = root / "gemma3mm";
    ::mkdir(dir.c_str(), 0755);
    const std::string text = llama_config("Gemma3ForCausalLM", ",\"head_dim\":32");
    write_file(dir + "/config.json", "{\"architectures\":[\"Gemma3ForConditionalGeneration\"],\"text_config\":" + text +
                                         ",\"vision_config\":{\"hidden_size\":8}}");
    std::vector<Entry> entries = tiny_llama(false);
    for (size_t i = 0; i < entries.size(); ++i) {
        // "model.x" -> "language_model.model.x" or "model.language_model.x", alternating.
        const std::string rest = entries[i].name.substr(6);
        entries[i].name = (i % 2 ? "language_model.model." : "model.language_model.") + rest;
    }
    entries.push_back({"vision_tower.vision_model.embeddings.patch_embedding.weight", "F32", {4}, floats(ramp(4))});
    entries.push_back({"multi_modal_projector.mm_input_projection_weight", "F32", {4}, floats(ramp(4))});
    write_file(dir + "/model.safetensors", safetensors_bytes(entries));
    HfModel model(dir);
    check(model.get_string("general.architecture", "") == "gemma3", "multimodal Gemma 3: the gemma3 text model");
    check(model.get_int("gemma3.embedding_length", 0) == 64, "hyperparameters from text_config");
    check(model.find_tensor("blk.0.attn_q.weight") != nullptr && model.find_tensor("token_embd.weight") != nullptr &&
              model.find_tensor("blk.0.ffn_down.weight") != nullptr,
          "both tensor prefixes mapped");
    check(model.tensors().size() == entries.size() - 2, "vision tower and projector not read");

    write_file(dir + "/config.json", "{\"architectures\":[\"Gemma3ForConditionalGeneration\"]}");
    check_refused("no text_config", [&] { HfModel m(dir); }, {"'text_config'"});
}

void test_tokenizer_config(const TempDir& root) {
    const std::string dir = root / "tok";
    ::mkdir(dir.c_str(), 0755);
    HfTokenizerConfig none = HfTokenizerConfig::load(dir, "");
    check(none.chat_template.empty() && none.eos_token_ids.empty() && !none.add_bos_token, "no files: defaults");
    write_file(dir + "/tokenizer_config.json", "{\"chat_template\":\"dir\",\"bos_token\":{\"content\":\"<s>\"},"
               "\"eos_token\":\"</s>\",\"add_bos_token\":true,\"add_eos_token\":false}");
    write_file(dir + "/generation_config.json", "{\"eos_token_id\":[2, 7]}");
    HfTokenizerConfig c = HfTokenizerConfig::load(dir, "");
    check(c.chat_template == "dir" && c.bos_token == "<s>" && c.eos_token == "</s>", "tokenizer_config.json read");
    check(c.add_bos_token == true && c.add_eos_token == false, "add_bos_token / add_eos_token");
    check(c.eos_token_ids == std::vector<int32_t>{2, 7}, "generation_config.json eos list");
    write_file(dir + "/chat_template.jinja", "jinja");
    check(HfTokenizerConfig::load(dir, "").chat_template == "jinja", "chat_template.jinja over tokenizer_config.json");
    write_file(root / "override.json", "{\"chat_template\":[{\"name\":\"tool_use\",\"template\":\"t\"},"
               "{\"name\":\"default\",\"template\":\"override\"}]}");
    check(HfTokenizerConfig::load(dir, root / "override.json").chat_template == "override",
          "tokenizer_config_path wins; the 'default' named template");
    check_refused("override missing", [&] { HfTokenizerConfig::load(dir, root / "nope.json"); },
                  {"nope.json", "does not exist"});
    write_file(dir + "/generation_config.json", "{\"eos_token_id\":\"x\"}");
    check_refused("eos not an id", [&] { HfTokenizerConfig::load(dir, ""); }, {"generation_config.json", "eos_token_id"});
}

// DeepSeek-V2's kv_b_proj split into attn_k_b (each head's key rows
// transposed) and attn_v_b in the checkpoint's own 16-bit type, as llama.cpp's
// converter writes them: the loader holds kv_b's bytes once, not a float32
// copy of twice the size.
void test_mla_kv_b_split(const TempDir& root) {
    const std::string dir = root / "deepseek2";
    ::mkdir(dir.c_str(), 0755);
    const int64_t heads = 2, nope = 3, v = 4, lora = 5;
    write_file(dir + "/config.json",
               "{\"architectures\":[\"DeepseekV2ForCausalLM\"],\"hidden_size\":8,\"num_hidden_layers\":1,"
               "\"intermediate_size\":16,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"vocab_size\":16,"
               "\"max_position_embeddings\":64,\"rms_norm_eps\":1e-6,\"rope_theta\":10000.0,\"kv_lora_rank\":5,"
               "\"qk_nope_head_dim\":3,\"qk_rope_head_dim\":2,\"v_head_dim\":4,\"q_lora_rank\":null,"
               "\"n_routed_experts\":null,\"first_k_dense_replace\":1,\"tie_word_embeddings\":true}");
    const std::vector<float> kv = ramp(static_cast<size_t>(heads * (nope + v) * lora));
    write_file(dir + "/model.safetensors",
               safetensors_bytes({{"model.embed_tokens.weight", "BF16", {16, 8}, bf16(ramp(128))},
                                  {"model.layers.0.self_attn.kv_b_proj.weight", "BF16", {heads * (nope + v), lora},
                                   bf16(kv)}}));
    HfModel model(dir);
    const GgufTensor* k_b = model.find_tensor("blk.0.attn_k_b.weight");
    const GgufTensor* v_b = model.find_tensor("blk.0.attn_v_b.weight");
    check(k_b != nullptr && v_b != nullptr && model.find_tensor("blk.0.attn_kv_b.weight") == nullptr,
          "kv_b_proj split into attn_k_b and attn_v_b");
    if (k_b == nullptr || v_b == nullptr) return;
    check(k_b->type == static_cast<uint32_t>(GgmlType::BF16) && v_b->type == static_cast<uint32_t>(GgmlType::BF16) &&
              k_b->dims == std::vector<int64_t>{nope, lora, heads} && v_b->dims == std::vector<int64_t>{lora, v, heads},
          "k_b and v_b keep the checkpoint's BF16, in llama.cpp's dims");
    const size_t stored = static_cast<size_t>(heads * (nope + v) * lora) * 2;
    check(k_b->nbytes + v_b->nbytes == stored && model.computed_bytes() == stored,
          "the split holds kv_b's own bytes (" + std::to_string(stored) + "), half a float32 copy's " +
              std::to_string(2 * stored) + "; got " + std::to_string(model.computed_bytes()));
    // A bf16 value's bits are the float's upper half: compare the bits moved.
    const auto bits = [](const GgufTensor* t, int64_t i) {
        uint16_t b;
        std::memcpy(&b, t->data + 2 * i, 2);
        return b;
    };
    const std::string want = bf16(kv);
    const auto source = [&](int64_t i) {
        uint16_t b;
        std::memcpy(&b, want.data() + 2 * i, 2);
        return b;
    };
    bool k_ok = true, v_ok = true;
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < nope; ++i)
            for (int64_t j = 0; j < lora; ++j)
                k_ok = k_ok && bits(k_b, (h * lora + j) * nope + i) == source(h * (nope + v) * lora + i * lora + j);
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t r = 0; r < v * lora; ++r)
            v_ok = v_ok && bits(v_b, h * v * lora + r) == source(h * (nope + v) * lora + nope * lora + r);
    check(k_ok, "k_b holds each head's key rows transposed");
    check(v_ok, "v_b holds each head's value rows");
}

}  // namespace

int main() {
    TempDir dir;
    test_reader(dir);
    test_reader_refusals(dir);
    test_directory(dir);
    test_shards(dir);
    test_gemma_norms(dir);
    test_multimodal_text_model(dir);
    test_tokenizer_config(dir);
    test_mla_kv_b_split(dir);
    return report();
}
