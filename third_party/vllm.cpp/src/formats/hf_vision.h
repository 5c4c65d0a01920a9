// A Hugging Face vision-language directory's image side as a ModelSource in
// llama.cpp's mmproj vocabulary (`clip.*` keys, `v.*` / `mm.*` tensor names),
// so a vision tower is written once for both forms (vision/vision_registry.h).
// Gemma3ForConditionalGeneration: config.json's vision_config and
// mm_tokens_per_image, preprocessor_config.json's mean and std; the SigLIP
// and projector tensors read in place (the soft-embedding norm's 1 + w
// computed, as llama.cpp's converter writes it).
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "formats/safetensors_file.h"

namespace vllm {

class HfVisionSource : public ModelSource {
public:
    // The directory's image side; nullptr when config.json has no
    // vision_config (a text model), or when its architecture's vision tower
    // is not supported: then `unsupported` names the architecture (its text
    // model still loads; images are refused naming it).
    static std::unique_ptr<HfVisionSource> open(const std::string& dir, std::string* unsupported);

    void release(const uint8_t*, size_t) const override {}

private:
    explicit HfVisionSource(const std::string& dir) : ModelSource(dir, "Hugging Face vision model") {}

    std::vector<std::unique_ptr<SafetensorsFile>> shards_;
    std::deque<std::vector<float>> computed_;  // tensors made here (stable addresses)
};

}  // namespace vllm
