#include "tokenizer/encoder_tokenizers.h"

#include "formats/gguf_reader.h"
#include "tokenizer/unigram_tokenizer.h"
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

// llama.cpp's default special ids of a vocabulary type (-1: none).
struct DefaultIds {
    int32_t bos, eos, unk, sep, pad;
};

void read_special_ids(const GgufFile& file, const DefaultIds& fallback, TokenizerData& d) {
    const size_t n = d.tokens.size();
    d.bos_id = token_id_or(file, "tokenizer.ggml.bos_token_id", fallback.bos, n);
    d.eos_id = token_id_or(file, "tokenizer.ggml.eos_token_id", fallback.eos, n);
    d.unk_id = token_id_or(file, "tokenizer.ggml.unknown_token_id", fallback.unk, n);
    d.sep_id = token_id_or(file, "tokenizer.ggml.seperator_token_id", fallback.sep, n);
    d.pad_id = token_id_or(file, "tokenizer.ggml.padding_token_id", fallback.pad, n);
}

}  // namespace

bool is_encoder_tokenizer_model(const std::string& model) { return model == "bert" || model == "t5"; }

void read_encoder_gguf_keys(const GgufFile& file, TokenizerData& d) {
        // Decoders' vocabularies keep what they read before.
    if (d.model == "t5") {
        // llama.cpp's LLAMA_VOCAB_TYPE_UGM (T5's ids): </s> after the text,
        // no <s>.
        read_special_ids(file, {-1, 1, 2, -1, 0}, d);
        d.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", false);
        d.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", true);
        d.remove_extra_whitespaces = file.get_bool("tokenizer.ggml.remove_extra_whitespaces", false);
        for (int64_t byte : file.get_int_array("tokenizer.ggml.precompiled_charsmap")) {
            d.precompiled_charsmap.push_back(static_cast<char>(byte));
        }
    } else if (d.model == "bert") {
        // llama.cpp's LLAMA_VOCAB_TYPE_WPM (BERT's uncased vocabulary):
        // [CLS] before, [SEP] after the text.
        read_special_ids(file, {101, -1, 100, 102, 0}, d);
        d.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", true);
        d.add_sep = file.get_bool("tokenizer.ggml.add_sep_token", true);
        d.lowercase = file.get_bool("tokenizer.ggml.normalizer.lowercase", true);
        d.strip_accents = file.get_bool("tokenizer.ggml.normalizer.strip_accents", d.lowercase);
    }
}

std::unique_ptr<Tokenizer> create_encoder_tokenizer(TokenizerData data) {
    if (data.model == "t5") {
        if (data.scores.empty()) throw_model_load("the Unigram tokenizer has no scores (tokenizer.ggml.scores)");
        return std::make_unique<UnigramTokenizer>(std::move(data));
    }
    return std::make_unique<WordPieceTokenizer>(std::move(data));
}

}  // namespace vllm
