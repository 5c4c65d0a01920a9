// Qwen2-VL's image processor: smart_resize, Pillow's bicubic resize,
// rescale and normalise as transformers' numpy code rounds them, patchify.
#include "vision/towers/qwen_image_processor.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "vision/pil_resample.h"

namespace vllm {

std::array<int, 2> qwen_smart_resize(int height, int width, const QwenImageProcessorConfig& config,
                                     const std::string& what) {
    const double factor = config.patch_size * config.merge_size;
    if (static_cast<double>(std::max(height, width)) / std::min(height, width) > 200.0)
        throw Error(VLLM_ERR_INVALID_ARGUMENT, what + ": the aspect ratio " + std::to_string(width) + "x" +
                                                   std::to_string(height) + " is past 200, which the model's image processor refuses");
    // Python's round() rounds halves to even, as nearbyint does by default.
    double h_bar = std::nearbyint(height / factor) * factor;
    double w_bar = std::nearbyint(width / factor) * factor;
    const double pixels = static_cast<double>(height) * width;
    if (h_bar * w_bar > static_cast<double>(config.max_pixels)) {
        const double beta = std::sqrt(pixels / static_cast<double>(config.max_pixels));
        h_bar = std::max(factor, std::floor(height / beta / factor) * factor);
        w_bar = std::max(factor, std::floor(width / beta / factor) * factor);
    } else if (h_bar * w_bar < static_cast<double>(config.min_pixels)) {
        const double beta = std::sqrt(static_cast<double>(config.min_pixels) / pixels);
        h_bar = std::ceil(height * beta / factor) * factor;
        w_bar = std::ceil(width * beta / factor) * factor;
    }
    return {static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

std::vector<float> qwen_pixel_values(const RgbImageView& image, const QwenImageProcessorConfig& config,
                                     const std::string& what, int& grid_h, int& grid_w) {
    check_rgb_image(image, what);
    const auto [height, width] = qwen_smart_resize(image.height, image.width, config, what);
    const std::vector<uint8_t> resized =
        pil_resize_rgb(image.rgb, image.width, image.height, width, height, PilFilter::BICUBIC);
    // transformers rescales in double and stores float32, then normalises in float32.
    std::vector<float> normalised(resized.size());
    for (size_t i = 0; i < resized.size(); ++i) {
        const float v = static_cast<float>(resized[i] * (1.0 / 255.0));
        normalised[i] = (v - config.mean[i % 3]) / config.std[i % 3];
    }
    const int p = config.patch_size, m = config.merge_size, t = config.temporal_patch_size;
    grid_h = height / p;
    grid_w = width / p;
    const int64_t row_len = int64_t(3) * t * p * p;
    std::vector<float> out(static_cast<size_t>(grid_h) * grid_w * row_len);
    // Row order (block row, block column, row in block, column in block);
    // within a row (channel, temporal copy, y, x).
    int64_t row = 0;
    for (int bh = 0; bh < grid_h / m; ++bh)
        for (int bw = 0; bw < grid_w / m; ++bw)
            for (int mh = 0; mh < m; ++mh)
                for (int mw = 0; mw < m; ++mw, ++row) {
                    float* dst = out.data() + row * row_len;
                    const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
                    for (int c = 0; c < 3; ++c)
                        for (int tt = 0; tt < t; ++tt)
                            for (int y = 0; y < p; ++y)
                                for (int x = 0; x < p; ++x)
                                    *dst++ = normalised[(static_cast<size_t>(y0 + y) * width + (x0 + x)) * 3 + c];
                }
    return out;
}

}  // namespace vllm
