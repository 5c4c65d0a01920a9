// Qwen2-VL's image processor (transformers' Qwen2VLImageProcessor, which
// Qwen2.5-VL uses too) in C++: smart_resize to sides that are multiples of
// patch * merge within [min_pixels, max_pixels] keeping the aspect ratio,
// Pillow's bicubic resize, rescale by 1/255, normalise per channel, and
// patchify into rows of C x T x P x P (the image repeated over the
// temporal patch), ordered merge-block by merge-block as the ViT's patch
// merger reads them. Equal to the PIL backend's pixel_values.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vision/image.h"

namespace vllm {

struct QwenImageProcessorConfig {
    int patch_size = 14;
    int temporal_patch_size = 2;
    int merge_size = 2;
    // transformers' defaults (Qwen2VLImageProcessor's size).
    int64_t min_pixels = 56 * 56;
    int64_t max_pixels = 28 * 28 * 1280;
    // OpenAI CLIP's mean and std.
    std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};
    std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
};

// transformers' smart_resize: {height, width} of the resized image.
// INVALID_ARGUMENT naming `what` when the aspect ratio passes 200, as
// transformers refuses it.
std::array<int, 2> qwen_smart_resize(int height, int width, const QwenImageProcessorConfig& config,
                                     const std::string& what);

// pixel_values of one image: (height / patch) * (width / patch) rows of
// 3 * temporal_patch_size * patch * patch floats; the grid (in patches) in
// `grid_h`, `grid_w`.
std::vector<float> qwen_pixel_values(const RgbImageView& image, const QwenImageProcessorConfig& config,
                                     const std::string& what, int& grid_h, int& grid_w);

}  // namespace vllm
