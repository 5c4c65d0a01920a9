// The architectures this engine runs, keyed by GGUF's general.architecture:
// ModelConfig reads a model's hyperparameters with its entry's traits, and
// build_decoder() makes its forward. A new family is one file under
// architectures/ and one line in model_registry.cpp.
#pragma once
#include <memory>
#include <string>

#include "model/architecture.h"

namespace vllm {

// The entry for `name`; nullptr when no architecture has it.
const Architecture* find_architecture(const std::string& name);

// "llama, mistral, ...": every registered name, for load errors.
std::string supported_architectures();

// The forward of a loaded model (config.architecture is registered: a
// ModelConfig from from_source has been checked against the registry).
std::unique_ptr<DecoderModel> build_decoder(ModelConfig config, ModelWeights weights, int max_model_len);

}  // namespace vllm
