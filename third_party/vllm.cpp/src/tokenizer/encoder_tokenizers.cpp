#include "tokenizer/encoder_tokenizers.h"

#include "formats/gguf_reader.h"
#include "tokenizer/wordpiece_tokenizer.h"
#include "util/error.h"

namespace vllm {

namespace {

// A special token id: the key's value, else llama.cpp's default for the
// model; either is ignored (-1) outside the vocabulary, as llama.cpp
// ignores it with a warning.
int32_t token_id_or(const GgufFile& file, const char* key, int32_t fallback, size_t n_tokens) {
    const int64_t id = file.get_int(key, fallback);
    return id >= 0 && static_cast<uint64_t>(id) < n_tokens ? static_cast<int32_t>(id) : -1;
}

}  // namespace

bool is_encoder_tokenizer_model(const std::string& model) { return model == "bert"; }

void read_encoder_gguf_keys(const GgufFile& file, TokenizerData& d) {
    // Decoders' vocabularies keep what they read before (a separator is an
    // encoder's).
    if (d.model != "bert") return;
    const size_t n = d.tokens.size();
    // llama.cpp's LLAMA_VOCAB_TYPE_WPM defaults (BERT's uncased vocabulary).
    d.bos_id = token_id_or(file, "tokenizer.ggml.bos_token_id", 101, n);
    d.unk_id = token_id_or(file, "tokenizer.ggml.unknown_token_id", 100, n);
    d.sep_id = token_id_or(file, "tokenizer.ggml.seperator_token_id", 102, n);
    d.pad_id = token_id_or(file, "tokenizer.ggml.padding_token_id", 0, n);
    d.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", true);
    d.add_sep = file.get_bool("tokenizer.ggml.add_sep_token", true);
    d.lowercase = file.get_bool("tokenizer.ggml.normalizer.lowercase", true);
    d.strip_accents = file.get_bool("tokenizer.ggml.normalizer.strip_accents", d.lowercase);
}

std::unique_ptr<Tokenizer> create_encoder_tokenizer(TokenizerData data) {
    return std::make_unique<WordPieceTokenizer>(std::move(data));
}

}  // namespace vllm
