// The vision registry's entries, one family per file of this folder
// (vision_registry.cpp lists them).
#pragma once
#include "vision/vision_registry.h"

namespace vllm {

extern const VisionArchitecture kGemma3Vision;  // gemma3.cpp
extern const VisionArchitecture kQwen25VlVision;  // qwen25vl.cpp

}  // namespace vllm
