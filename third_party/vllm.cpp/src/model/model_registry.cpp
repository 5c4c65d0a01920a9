#include "model/model_registry.h"

#include "model/architectures/architectures.h"
#include "util/error.h"

namespace vllm {

namespace {

// In the order load errors list them.
const Architecture* const kArchitectures[] = {
    &kLlamaArchitecture, &kMistralArchitecture, &kQwen2Architecture,  &kQwen3Architecture,
    &kGemmaArchitecture, &kGemma2Architecture,  &kGemma3Architecture, &kPhi3Architecture,
    &kQwen2MoeArchitecture, &kQwen3MoeArchitecture, &kOlmoeArchitecture, &kGraniteMoeArchitecture,
    &kGptOssArchitecture,
    &kSmolLm3Architecture, &kOlmo2Architecture, &kGraniteArchitecture, &kGlm4Architecture,
    &kGemma4Architecture,
    &kDeepseek2Architecture,
    &kQwen35Architecture, &kQwen35MoeArchitecture,
    &kBertArchitecture,
    &kQwen2VlArchitecture, &kQwen3VlArchitecture,
};

}  // namespace

const Architecture* find_architecture(const std::string& name) {
    for (const Architecture* a : kArchitectures)
        if (name == a->name) return a;
    return nullptr;
}

std::string supported_architectures() {
    std::string names;
    for (const Architecture* a : kArchitectures) names += std::string(names.empty() ? "" : ", ") + a->name;
    return names;
}

std::unique_ptr<DecoderModel> build_decoder(ModelConfig config, ModelWeights weights, int max_model_len) {
    const Architecture* a = find_architecture(config.architecture);
    if (a == nullptr)
        throw_model_load("unsupported architecture '" + config.architecture + "' (supported: " +
                         supported_architectures() + ")");
    return a->build(std::move(config), std::move(weights), max_model_len);
}

}  // namespace vllm
