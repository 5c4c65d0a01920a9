// One entry of the model registry (model_registry.h): an architecture as
// GGUF's general.architecture names it, what ModelConfig reads differently
// for it (its traits), and the forward it runs. Each architecture family
// defines its entries in its own file under architectures/.
#pragma once
#include <memory>

#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace vllm {

// Builds the architecture's forward for a loaded model (see Decoder's
// constructor for max_model_len).
using BuildDecoder = std::unique_ptr<DecoderModel> (*)(ModelConfig config, ModelWeights weights, int max_model_len);

struct Architecture {
    const char* name;  // general.architecture
    ArchitectureTraits traits;
    BuildDecoder build;
};

}  // namespace vllm
