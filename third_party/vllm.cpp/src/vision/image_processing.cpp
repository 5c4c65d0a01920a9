// Pillow's bilinear resampling (Resample.c's 8-bit path) and normalisation.
#include "vision/image_processing.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

struct Coefficients {
    int ksize = 0;
    std::vector<int> bounds;  // per output: first input, count
    std::vector<int> k;       // per output: ksize fixed-point weights
};

// Pillow's precompute_coeffs with the bilinear filter (support 1), then
// normalize_coeffs_8bpc.
Coefficients coefficients(int in_size, int out_size) {
    const double scale = double(in_size) / out_size;
    const double filter_scale = std::max(scale, 1.0);
    const double support = 1.0 * filter_scale;
    Coefficients c;
    c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    c.bounds.resize(size_t(out_size) * 2);
    c.k.assign(size_t(out_size) * c.ksize, 0);
    std::vector<double> w(c.ksize);
    for (int xx = 0; xx < out_size; ++xx) {
        const double center = (xx + 0.5) * scale;
        const double ss = 1.0 / filter_scale;
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        double ww = 0;
        for (int x = 0; x < xmax; ++x) {
            double t = (x + xmin - center + 0.5) * ss;
            if (t < 0) t = -t;
            w[x] = t < 1.0 ? 1.0 - t : 0.0;
            ww += w[x];
        }
        for (int x = 0; x < xmax; ++x) {
            const double v = ww != 0.0 ? w[x] / ww : w[x];
            c.k[size_t(xx) * c.ksize + x] =
                static_cast<int>(v < 0 ? std::trunc(-0.5 + v * (1 << kPrecisionBits)) : std::trunc(0.5 + v * (1 << kPrecisionBits)));
        }
        c.bounds[size_t(xx) * 2] = xmin;
        c.bounds[size_t(xx) * 2 + 1] = xmax;
    }
    return c;
}

uint8_t clip8(int64_t v) {
    v >>= kPrecisionBits;
    return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One pass: along x (horizontal) or y, from `in` (w x h) to `out`.
RgbImage resample(const RgbImage& in, int out_w, int out_h, bool horizontal) {
    const Coefficients c = coefficients(horizontal ? in.width : in.height, horizontal ? out_w : out_h);
    RgbImage out;
    out.width = out_w;
    out.height = out_h;
    out.rgb.resize(size_t(out_w) * out_h * 3);
    for (int y = 0; y < out_h; ++y)
        for (int x = 0; x < out_w; ++x) {
            const int o = horizontal ? x : y;
            const int first = c.bounds[size_t(o) * 2], count = c.bounds[size_t(o) * 2 + 1];
            const int* k = &c.k[size_t(o) * c.ksize];
            for (int ch = 0; ch < 3; ++ch) {
                int64_t ss = int64_t(1) << (kPrecisionBits - 1);
                for (int i = 0; i < count; ++i) {
                    const int sx = horizontal ? first + i : x, sy = horizontal ? y : first + i;
                    ss += int64_t(in.rgb[(size_t(sy) * in.width + sx) * 3 + ch]) * k[i];
                }
                out.rgb[(size_t(y) * out_w + x) * 3 + ch] = clip8(ss);
            }
        }
    return out;
}

}  // namespace

RgbImage resize_bilinear(const RgbImageView& image, int width, int height) {
    RgbImage current = RgbImage::copy_of(image, "image");
    // Pillow runs first the pass whose intermediate image is smaller
    // (vertical first when in_w * out_h < out_w * in_h), each rounded to bytes.
    const bool vertical_first = int64_t(image.width) * height < int64_t(width) * image.height;
    if (vertical_first && height != current.height) current = resample(current, current.width, height, false);
    if (width != current.width) current = resample(current, width, current.height, true);
    if (height != current.height) current = resample(current, current.width, height, false);
    return current;
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
