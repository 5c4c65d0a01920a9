// Qwen2.5-VL's vision tower (qwen25vl.cpp): its registry entry, projector
// type "qwen2.5vl_merger". Not in the registry's table (towers.h) yet: its
// rows need the language model's M-RoPE image positions, which the engine's
// image road does not hand the decoder yet, so a qwen2.5vl_merger mmproj is
// refused by name at load (docs/features/vision.md); tests build it from
// this entry.
#pragma once
#include "vision/vision_registry.h"

namespace vllm {

extern const VisionArchitecture kQwen25VlVision;

}  // namespace vllm
