// TokenizerData::from_gguf: the tokenizer.ggml.* metadata.
#include "formats/gguf_reader.h"
#include "tokenizer/encoder_tokenizers.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace vllm {

namespace {

// A special token id; ids outside the vocabulary are ignored (-1), as
// llama.cpp ignores them with a warning.
int32_t read_token_id(const GgufFile& file, const char* key, size_t n_tokens) {
    const int64_t id = file.get_int(key, -1);
    return id >= 0 && static_cast<uint64_t>(id) < n_tokens ? static_cast<int32_t>(id) : -1;
}

}  // namespace

TokenizerData TokenizerData::from_gguf(const GgufFile& file) {
    TokenizerData d;
    d.model = file.require_string("tokenizer.ggml.model");
    d.pre = file.get_string("tokenizer.ggml.pre", "");
    d.tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (d.tokens.empty()) throw_model_load("'" + file.path() + "' has no tokenizer.ggml.tokens");
    const size_t n = d.tokens.size();

    const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
    if (!types.empty() && types.size() < n) {
        throw_model_load("'" + file.path() + "': tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                         " entries for " + std::to_string(n) + " tokens");
    }
    d.token_types.assign(types.begin(), types.begin() + (types.empty() ? 0 : n));

    d.merges = file.get_string_array("tokenizer.ggml.merges");
    const std::vector<double> scores = file.get_float_array("tokenizer.ggml.scores");
    if (!scores.empty() && scores.size() != n) {
        throw_model_load("'" + file.path() + "': tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                         " entries for " + std::to_string(n) + " tokens");
    }
    // llama.cpp keeps scores as float: ties between them are float ties.
    d.scores.assign(scores.begin(), scores.end());
    d.bos_id = read_token_id(file, "tokenizer.ggml.bos_token_id", n);
    d.eos_id = read_token_id(file, "tokenizer.ggml.eos_token_id", n);
    d.eot_id = read_token_id(file, "tokenizer.ggml.eot_token_id", n);
    d.eom_id = read_token_id(file, "tokenizer.ggml.eom_token_id", n);
    d.unk_id = read_token_id(file, "tokenizer.ggml.unknown_token_id", n);
    d.pad_id = read_token_id(file, "tokenizer.ggml.padding_token_id", n);

    // Without the keys, llama.cpp's defaults: SentencePiece adds BOS and a
    // space prefix; for BPE the pre-tokenizer decides (llama3 models add
    // BOS).
    const bool spm = d.model == "llama";
    PreTokenizerSpec spec;
    const bool known_pre = find_pretokenizer(d.pre, spec);
    d.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", spm || (known_pre && spec.add_bos_default));
    // Gemma 4 always starts with BOS: llama.cpp overrides a false key.
    if (d.model == "gemma4") d.add_bos = true;
    d.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);
    d.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", spm);
    read_encoder_gguf_keys(file, d);
    return d;
}

}  // namespace vllm
