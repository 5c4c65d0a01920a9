// The vision registry's entries, one family per file of this folder
// (vision_registry.cpp lists them).
#pragma once
#include "vision/vision_registry.h"

namespace vllm {

}  // namespace vllm
