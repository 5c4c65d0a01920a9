// Multimodal RoPE positions of a prompt with images (transformers'
// get_rope_index for Qwen2-VL, Qwen2.5-VL and Qwen3-VL images): text tokens
// count on from 0 with their three positions equal; an image's placeholder
// tokens, one per merged unit in row-major order, take (start, start + row,
// start + column) with start the position after the text before it; the
// text after an image goes on from start + max(merged rows, merged
// columns). A token at index i past the prompt (generated) is at i + delta
// on every axis.
#pragma once
#include <cstdint>
#include <vector>

#include "vision/vision_tower.h"

namespace vllm {

// One image's placeholder run in the prompt: its first token's index and its plan.
struct ImagePlacement {
    int first = 0;
    ImagePlan plan;
};

struct MropePositions {
    std::vector<int32_t> positions;  // [tokens][3]: temporal, height, width
    int32_t delta = 0;               // a later token's position minus its index
};

// `images` in prompt order, each run inside [0, n_tokens) and after the last;
// INVALID_ARGUMENT otherwise.
MropePositions mrope_positions(int n_tokens, const std::vector<ImagePlacement>& images);

}  // namespace vllm
