// A model's files opened for loading: a GGUF file, or a Hugging Face
// directory (config.json + safetensors + tokenizer.json and its companion
// files), read into the weights' source, the tokenizer, the chat template
// and the model's config and weights. The engine opens its model and a
// speculative draft model this way.
#pragma once
#include <memory>
#include <string>

#include "formats/model_source.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

struct ModelFiles {
    std::unique_ptr<ModelSource> source;  // the weights point into it
    std::unique_ptr<Tokenizer> tokenizer;
    // A GGUF file's tokenizer.chat_template, or a directory's as
    // HfTokenizerConfig chooses it ("" when there is none).
    std::string chat_template;
    ModelConfig config;
    ModelWeights weights;

    // MODEL_LOAD for unreadable, corrupt or unsupported files, and for a
    // tokenizer whose size is not the embedding's. `tokenizer_config_path`
    // replaces a directory's tokenizer_config.json ("": its own). The
    // weights are prepared on `threads` threads (0: the default count).
    static ModelFiles open(const std::string& path, const std::string& tokenizer_config_path, int threads = 0);
};

}  // namespace vllm
