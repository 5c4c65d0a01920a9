// The vision towers by projector type (`clip.projector_type` of a GGUF
// mmproj file; a Hugging Face directory's architecture maps to one in
// formats/hf_architecture). Each family's file (vision/towers/<family>.cpp)
// adds one entry; an unknown type is refused by name at load.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "vision/vision_tower.h"

namespace vllm {

struct VisionArchitecture {
    const char* projector_type;  // "gemma3", "qwen2vl_merger", "qwen25vl", "qwen3vl_merger", ...
    // Builds the tower over `mmproj` (which must outlive it). `language_dim`:
    // the text model's hidden size, checked against the projector's output.
    std::unique_ptr<VisionTower> (*create)(const ModelSource& mmproj, int language_dim);
};

// Every registered tower (for messages and tests).
const std::vector<VisionArchitecture>& vision_architectures();

// The tower for `mmproj`'s projector type; MODEL_LOAD error naming an
// unsupported type (and the supported ones).
std::unique_ptr<VisionTower> load_vision_tower(const ModelSource& mmproj, int language_dim);

}  // namespace vllm
