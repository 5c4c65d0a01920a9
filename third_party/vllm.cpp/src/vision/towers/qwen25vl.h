// Qwen2.5-VL's vision tower (qwen25vl.cpp): its registry entry, projector
// type "qwen2.5vl_merger" (in the registry's table, towers.h; the engine
// hands the decoder the M-RoPE image positions, vision/mrope_positions.h).
// Tests build it from this entry.
#pragma once
#include "vision/vision_registry.h"

namespace vllm {

extern const VisionArchitecture kQwen25VlVision;

}  // namespace vllm
