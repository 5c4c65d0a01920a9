#include "engine/model_files.h"

#include <sys/stat.h>

#include "formats/gguf_reader.h"
#include "formats/hf_json.h"
#include "formats/hf_model.h"
#include "formats/hf_tokenizer_config.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "util/error.h"

namespace vllm {

namespace {

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The tokenizer and chat template of a Hugging Face directory (its
// tokenizer.json, tokenizer_config.json or the tokenizer_config_path
// override, chat_template.jinja, generation_config.json).
void load_hf_tokenizer(const std::string& path, const std::string& tokenizer_config_path, ModelFiles& files) {
    HfTokenizerConfig config = HfTokenizerConfig::load(path, tokenizer_config_path);
    HfTokenizerOptions options;
    options.bos_token = config.bos_token;
    options.eos_token = config.eos_token;
    options.add_bos_token = config.add_bos_token;
    options.add_eos_token = config.add_eos_token;
    options.eos_token_ids = std::move(config.eos_token_ids);
    const std::string json_path = path + "/tokenizer.json";
    if (!file_exists(json_path)) throw_model_load("cannot load '" + path + "': tokenizer.json is missing");
    files.tokenizer = load_hf_tokenizer_json(json_path, options);
    files.chat_template = std::move(config.chat_template);
}

}  // namespace

ModelFiles ModelFiles::open(const std::string& path, const std::string& tokenizer_config_path, int threads) {
    ModelFiles files;
    // A directory is a Hugging Face model; anything else must be a GGUF file.
    if (is_directory(path)) {
        auto hf = std::make_unique<HfModel>(path);
        load_hf_tokenizer(path, tokenizer_config_path, files);
        // Checkpoints often pad the embedding past the tokenizer (Qwen 2:
        // 151936 rows for 151665 tokens); no text maps to those rows, so
        // the model computes the tokenizer's rows only.
        hf->limit_vocab(files.tokenizer->vocab_size());
        files.source = std::move(hf);
    } else {
        auto gguf = std::make_unique<GgufFile>(path);
        files.tokenizer = Tokenizer::create(TokenizerData::from_gguf(*gguf));
        files.chat_template = gguf->get_string("tokenizer.chat_template", "");
        files.source = std::move(gguf);
    }
    files.config = ModelConfig::from_source(*files.source);
    files.weights = ModelWeights::from_source(*files.source, files.config, threads);
    if (files.tokenizer->vocab_size() != files.config.vocab_size)
        throw_model_load("cannot load '" + path + "': the tokenizer has " + std::to_string(files.tokenizer->vocab_size()) +
                         " tokens but the embedding has " + std::to_string(files.config.vocab_size) + " rows");
    return files;
}

}  // namespace vllm
