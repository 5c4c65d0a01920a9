// Pillow's resampling (libImaging's Resample.c semantics, and its order of
// the passes as Pillow 13 runs them) for 8-bit RGB.
#include "vision/pil_resample.h"

#include <cmath>

namespace vllm {

namespace {

// Pillow's fixed point for 8-bit images: 32 bits less 8 for the pixel and 2 of headroom.
constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
    x = std::fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

// Each output index's first source index, its tap count, and ksize fixed-point weights.
struct Taps {
    int ksize = 0;
    std::vector<int> first, count;
    std::vector<int32_t> weights;
};

Taps taps(int in_size, int out_size, PilFilter filter) {
    const double support_of_filter = filter == PilFilter::BICUBIC ? 2.0 : 1.0;
    double (*kernel)(double) = filter == PilFilter::BICUBIC ? bicubic : bilinear;
    const double scale = static_cast<double>(in_size) / out_size;
    const double filter_scale = scale < 1.0 ? 1.0 : scale;
    const double support = support_of_filter * filter_scale;
    Taps t;
    t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    t.first.resize(out_size);
    t.count.resize(out_size);
    t.weights.assign(static_cast<size_t>(out_size) * t.ksize, 0);
    std::vector<double> k(t.ksize);
    for (int xx = 0; xx < out_size; ++xx) {
        const double center = (xx + 0.5) * scale;
        // Pillow rounds the window's ends by truncation after adding 0.5.
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        double total = 0.0;
        const double inverse_scale = 1.0 / filter_scale;  // multiplied, as Pillow does (not divided)
        for (int x = 0; x < xmax; ++x) {
            k[x] = kernel((x + xmin - center + 0.5) * inverse_scale);
            total += k[x];
        }
        for (int x = 0; x < xmax; ++x) {
            const double w = total != 0.0 ? k[x] / total : k[x];
            const double fixed = w * (1 << kPrecisionBits);
            t.weights[static_cast<size_t>(xx) * t.ksize + x] = static_cast<int32_t>(w < 0 ? fixed - 0.5 : fixed + 0.5);
        }
        t.first[xx] = xmin;
        t.count[xx] = xmax;
    }
    return t;
}

uint8_t clip8(int32_t v) {
    if (v >= (1 << kPrecisionBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<uint8_t>(v >> kPrecisionBits);
}

// One pass along an axis: `in` has `lines` lines of in_size pixels each
// `stride` pixels apart (pixel i of line l at l * line_step + i * stride);
// so has `out` with out_size pixels.
void resample_pass(const uint8_t* in, int lines, int64_t in_line_step, int64_t in_stride, const Taps& t, int out_size,
                   uint8_t* out, int64_t out_line_step, int64_t out_stride) {
    for (int l = 0; l < lines; ++l)
        for (int o = 0; o < out_size; ++o) {
            const int32_t* w = &t.weights[static_cast<size_t>(o) * t.ksize];
            for (int c = 0; c < 3; ++c) {
                int32_t sum = 1 << (kPrecisionBits - 1);
                for (int i = 0; i < t.count[o]; ++i)
                    sum += in[l * in_line_step + (t.first[o] + i) * in_stride + c] * w[i];
                out[l * out_line_step + o * out_stride + c] = clip8(sum);
            }
        }
}

}  // namespace

std::vector<uint8_t> pil_resize_rgb(const uint8_t* rgb, int width, int height, int out_width, int out_height,
                                    PilFilter filter) {
    std::vector<uint8_t> current(rgb, rgb + static_cast<size_t>(width) * height * 3);
    int w = width, h = height;
    const auto horizontal = [&] {
        if (out_width == w) return;
        const Taps t = taps(w, out_width, filter);
        std::vector<uint8_t> next(static_cast<size_t>(out_width) * h * 3);
        resample_pass(current.data(), h, int64_t(w) * 3, 3, t, out_width, next.data(), int64_t(out_width) * 3, 3);
        current.swap(next);
        w = out_width;
    };
    const auto vertical = [&] {
        if (out_height == h) return;
        const Taps t = taps(h, out_height, filter);
        std::vector<uint8_t> next(static_cast<size_t>(w) * out_height * 3);
        resample_pass(current.data(), w, 3, int64_t(w) * 3, t, out_height, next.data(), 3, int64_t(w) * 3);
        current.swap(next);
        h = out_height;
    };
    // Pillow runs the horizontal pass first, except when the width grows
    // and the height shrinks: then the shrinking (vertical) pass goes
    // first (the intermediate 8-bit rounding makes the order matter).
    if (out_width > width && out_height < height) {
        vertical();
        horizontal();
    } else {
        horizontal();
        vertical();
    }
    return current;
}

}  // namespace vllm
