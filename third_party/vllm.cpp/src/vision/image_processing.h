// What image processors do before a tower sees the pixels: resizing as
// Pillow does it (transformers' processors resize PIL images, and their
// torchvision path matches Pillow's antialiased filters), then rescale and
// normalise into channels-first floats.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "vision/image.h"

namespace vllm {

// Pillow's Image.resize(size, BILINEAR) of an RGB image, bit for bit
// (pil_resample.h).
RgbImage resize_bilinear(const RgbImageView& image, int width, int height);

// pixels[c][y][x] = (rgb / 255 * rescale... ) as transformers' rescale then
// normalize: (value * rescale_factor - mean[c]) / std[c], channels first.
std::vector<float> normalize_chw(const RgbImageView& image, float rescale_factor, const std::array<float, 3>& mean,
                                 const std::array<float, 3>& std);

}  // namespace vllm
