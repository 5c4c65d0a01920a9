// Helper program for the Python suite (tests/models/test_vision_gemma3.py):
// a vision tower's preprocessing of one image against the HF processor's.
//   vision_pixels_probe MMPROJ WIDTH HEIGHT RGB_FILE PIXELS_FILE LANGUAGE_DIM
// RGB_FILE: width * height * 3 bytes; PIXELS_FILE: the processor's
// pixel_values for it, float32, in the tower's PixelValues order. Prints the
// largest absolute difference, the plan, and "ok" (exit 0) or the failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "util/error.h"
#include "util/thread_pool.h"
#include "vision/vision_registry.h"

namespace {
std::vector<char> read_all(const char* path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s MMPROJ WIDTH HEIGHT RGB_FILE PIXELS_FILE LANGUAGE_DIM\n", argv[0]);
        return 2;
    }
    try {
        vllm::GgufFile mmproj(argv[1]);
        auto tower = vllm::load_vision_tower(mmproj, std::atoi(argv[6]));
        const std::vector<char> rgb = read_all(argv[4]), expected_bytes = read_all(argv[5]);
        const vllm::RgbImageView image{std::atoi(argv[2]), std::atoi(argv[3]),
                                       reinterpret_cast<const uint8_t*>(rgb.data()), rgb.size()};
        const vllm::PixelValues px = tower->preprocess(image, "image 1");
        const size_t n = expected_bytes.size() / sizeof(float);
        if (px.data.size() != n) {
            std::printf("FAIL: %zu pixel values, expected %zu\n", px.data.size(), n);
            return 1;
        }
        const float* expected = reinterpret_cast<const float*>(expected_bytes.data());
        double worst = 0;
        for (size_t i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(double(px.data[i]) - expected[i]));
        std::vector<float> rows(size_t(px.plan.num_tokens) * tower->output_dim());
        vllm::ThreadPool pool(2);
        tower->encode(px, pool, rows.data());
        bool finite = true;
        for (float v : rows) finite = finite && std::isfinite(v);
        std::printf("max_abs_diff %.9g tokens %d grid %d %d %d finite %d\n", worst, px.plan.num_tokens,
                    px.plan.grid.t, px.plan.grid.h, px.plan.grid.w, finite ? 1 : 0);
        std::printf(worst <= 1e-5 && finite ? "ok\n" : "FAIL\n");
        return worst <= 1e-5 && finite ? 0 : 1;
    } catch (const vllm::Error& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
}
