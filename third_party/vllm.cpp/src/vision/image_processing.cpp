// Pillow's bilinear resize (pil_resample.h) as an RgbImage, and normalisation.
#include "vision/image_processing.h"

#include "vision/pil_resample.h"

#include <algorithm>
#include <cmath>

namespace vllm {

RgbImage resize_bilinear(const RgbImageView& image, int width, int height) {
    check_rgb_image(image, "image");
    RgbImage out;
    out.width = width;
    out.height = height;
    out.rgb = pil_resize_rgb(image.rgb, image.width, image.height, width, height, PilFilter::BILINEAR);
    return out;
}

std::vector<float> normalize_chw(const RgbImageView& image, float rescale_factor, const std::array<float, 3>& mean,
                                 const std::array<float, 3>& std) {
    const size_t plane = size_t(image.width) * image.height;
    std::vector<float> out(plane * 3);
    for (size_t p = 0; p < plane; ++p)
        for (int c = 0; c < 3; ++c)
            out[c * plane + p] = (float(image.rgb[p * 3 + c]) * rescale_factor - mean[c]) / std[c];
    return out;
}

}  // namespace vllm
