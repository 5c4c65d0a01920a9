// A sentence-transformers model directory's pooling choice: modules.json's
// Pooling module (its config.json: pooling_mode_cls_token / _mean_tokens /
// _lasttoken, or pooling_mode) and whether a Normalize module follows, as
// llama.cpp's converter and vLLM read them, and the Dense modules after it.
// Other pooling modes and modules that change the vector (a Dense with a
// bias or an activation, ...) are refused by name at load: the engine would
// otherwise serve a different vector than the model's.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace vllm {

struct SentenceTransformersPooling {
    // llama.cpp's LLAMA_POOLING_TYPE numbers (the `<arch>.pooling_type` key):
    // 1 MEAN, 2 CLS, 3 LAST.
    int pooling_type = 0;
    bool normalize = false;
    // The Dense modules after the pooling, in order: each one's folder (a
    // linear map without bias or activation, its weight `linear.weight` in
    // the folder's model.safetensors: EmbeddingGemma's). Read only by an
    // architecture that applies them (HfArchitecture::dense_modules); the
    // others refuse a model that has them.
    std::vector<std::string> dense_dirs;
};

// nullopt: the directory has no modules.json (not a sentence-transformers model).
std::optional<SentenceTransformersPooling> read_sentence_transformers(const std::string& dir);

}  // namespace vllm
