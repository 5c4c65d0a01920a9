// The vision registry's entries, one family per file of this folder
// (vision_registry.cpp lists them).
#pragma once
#include "vision/vision_registry.h"

namespace vllm {

// qwen25vl.cpp: Qwen2.5-VL's ViT and patch merger. Not in the registry's
// table yet: its rows need the language model's M-RoPE image positions,
// which the decoder does not compute yet, so a qwen2.5vl_merger mmproj is
// refused by name at load (docs/features/vision.md).
extern const VisionArchitecture kQwen25VlVision;

}  // namespace vllm
