// Qwen2.5-VL's image side against transformers and llama.cpp
// (tests/golden/tiny_vl, made by tests/golden/make_vl_goldens.py): for each
// golden image, the tower's plan (grid and placeholder count), its
// preprocess (Pillow's bicubic resize, rescale, normalise, patchify)
// against Qwen2VLImageProcessorPil's pixel_values, and its encode (ViT with
// window attention, patch merger) of transformers' own pixel values against
// model.visual's output; on the image neither resizes, the whole road
// against llama.cpp's mtmd; the image prompt's multimodal RoPE positions
// (mrope_positions) against transformers' get_rope_index; which position
// each rotated pair follows; and the refusals (an aspect ratio past 200, an
// empty image, pixel values of another plan, a projector for another
// hidden size; the registry's refusal of this projector type while the
// engine hands the decoder no M-RoPE image positions).
//
// Usage: test_qwen_vision <tests/golden/tiny_vl>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "model/blocks/rotary.h"
#include "model/model_config.h"
#include "util/error.h"
#include "util/json.h"
#include "util/thread_pool.h"
#include "vision/mrope_positions.h"
#include "vision/towers/qwen_image_processor.h"
#include "vision/towers/qwen25vl.h"
#include "vision/vision_registry.h"
#include "check.h"

using namespace vllm;

namespace {

// Tolerances: pixel values are computed in the same float32 steps as
// transformers' (the resize is Pillow's integer arithmetic), so they agree
// to rounding; the tower's rows to float32 accumulation order over 4 tiny
// blocks.
constexpr float kPixelTolerance = 1e-6f;
constexpr float kRowTolerance = 1e-4f;
// llama.cpp rounds activations to float16 for F16 matrices: its rows are
// 0.0023 from transformers' on the golden image.
constexpr float kLlamaCppTolerance = 5e-3f;

// A little-endian .npy file of float32 ('<f4') or uint8 ('|u1'), C order.
struct Npy {
    std::vector<int64_t> shape;
    std::vector<float> f32;
    std::vector<uint8_t> u8;
};

Npy read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string raw = buffer.str();
    Npy out;
    if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not a .npy file");
    const size_t header_len = raw[6] == 1 ? size_t(uint8_t(raw[8])) | size_t(uint8_t(raw[9])) << 8 : 0;
    const size_t data_at = 10 + header_len;
    const std::string header = raw.substr(10, header_len);
    const size_t open = header.find('(', header.find("shape")), close = header.find(')', open);
    std::stringstream dims(header.substr(open + 1, close - open - 1));
    for (std::string d; std::getline(dims, d, ',');)
        if (d.find_first_not_of(' ') != std::string::npos) out.shape.push_back(std::stoll(d));
    int64_t n = 1;
    for (int64_t d : out.shape) n *= d;
    if (header.find("'<f4'") != std::string::npos) {
        out.f32.resize(n);
        std::memcpy(out.f32.data(), raw.data() + data_at, n * 4);
    } else if (header.find("'|u1'") != std::string::npos) {
        out.u8.assign(raw.begin() + data_at, raw.begin() + data_at + n);
    } else {
        throw std::runtime_error(path + ": unexpected dtype in " + header);
    }
    return out;
}

float max_abs_diff(const float* a, const float* b, size_t n) {
    float worst = 0.0f;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

bool refused(vllm_status status, const std::string& part, const std::function<void()>& run) {
    try {
        run();
    } catch (const Error& e) {
        if (e.status() == status && std::string(e.what()).find(part) != std::string::npos) return true;
        std::printf("  got: %s\n", e.what());
        return false;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <tests/golden/tiny_vl>\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    ThreadPool pool(2);
    GgufFile mmproj(dir + "/qwen2vl-mmproj.gguf");
    // The registry builds it from the projector type, as the engine does.
    std::unique_ptr<VisionTower> tower = load_vision_tower(mmproj, 64);
    check(tower->name() == "qwen2.5vl_merger", "the projector type names the tower");
    check(tower->output_dim() == 64, "rows of the language model's hidden size");
    check(tower->prompt_format().placeholder_token == "<|image_pad|>", "Qwen's image placeholder");

    for (int i = 0; i < 4; ++i) {
        const std::string stem = dir + "/qwen2vl_";
        const Npy image = read_npy(stem + "image" + std::to_string(i) + ".npy");
        const Npy pixels = read_npy(stem + "pixels" + std::to_string(i) + ".npy");
        const Npy rows = read_npy(stem + "vision" + std::to_string(i) + ".npy");
        const RgbImageView view{int(image.shape[1]), int(image.shape[0]), image.u8.data(), image.u8.size()};
        const std::string what = "image " + std::to_string(i);
        const ImagePlan plan = tower->plan(view, what);
        check(int64_t(plan.grid.h) * plan.grid.w == pixels.shape[0] && plan.grid.t == 1,
              what + ": the plan's grid has transformers' patch count");
        check(plan.num_tokens == rows.shape[0], what + ": one placeholder per merged unit, as transformers'");
        check(tower->expand_marker(plan).size() == size_t(plan.num_tokens) * std::strlen("<|image_pad|>"),
              what + ": the marker expands to num_tokens placeholders");

        const PixelValues mine = tower->preprocess(view, what);
        const bool same_shape = mine.shape == pixels.shape && mine.data.size() == pixels.f32.size();
        check(same_shape, what + ": pixel_values' shape");
        if (same_shape) {
            const float err = max_abs_diff(mine.data.data(), pixels.f32.data(), pixels.f32.size());
            std::printf("%s %dx%d: grid %dx%d, pixel_values max diff %.3g\n", what.c_str(), view.width, view.height,
                        plan.grid.h, plan.grid.w, err);
            check(err <= kPixelTolerance, what + ": pixel_values equal transformers'");
        }

        // Encode transformers' own pixel values (the tower's check apart from the processor's).
        PixelValues given;
        given.shape = pixels.shape;
        given.data = pixels.f32;
        given.plan = plan;
        std::vector<float> out(size_t(plan.num_tokens) * 64, NAN);
        tower->encode(given, pool, out.data());
        const float err = max_abs_diff(out.data(), rows.f32.data(), rows.f32.size());
        std::printf("%s: %d rows, max diff %.3g from transformers' visual()\n", what.c_str(), plan.num_tokens, err);
        check(err <= kRowTolerance, what + ": the tower's rows equal transformers' visual()");

        if (i == 3) {
            // The image neither side resizes: the whole road (preprocess,
            // encode) against llama.cpp's mtmd on the same mmproj GGUF.
            const Npy theirs = read_npy(stem + "llama_cpp_vision3.npy");
            std::vector<float> road(size_t(plan.num_tokens) * 64, NAN);
            tower->encode(mine, pool, road.data());
            const bool same = theirs.f32.size() == road.size();
            const float diff = same ? max_abs_diff(road.data(), theirs.f32.data(), road.size()) : INFINITY;
            std::printf("%s: max diff %.3g from llama.cpp's mtmd\n", what.c_str(), diff);
            check(diff <= kLlamaCppTolerance, what + ": the rows equal llama.cpp's within its float16 rounding");
        }
        if (i == 0) {
            given.shape[0] -= 4;
            check(refused(VLLM_ERR_INVALID_ARGUMENT, "pixel values do not match", [&] { tower->encode(given, pool, out.data()); }),
                  "pixel values of another plan refused");
        }
    }

    // The image prompt's M-RoPE positions: its placeholder runs, each with
    // its image's plan, against transformers' get_rope_index.
    std::ifstream record_file(dir + "/qwen2vl.json");
    std::stringstream record_text;
    record_text << record_file.rdbuf();
    const json::Value record = json::parse(record_text.str());
    const json::Value* prompt = record.find("image_prompt");
    check(prompt != nullptr, "the golden has the image prompt");
    if (prompt != nullptr) {
        const int64_t image_token = record.find("config")->find("image_token_id")->as_int();
        const std::vector<json::Value>& ids = prompt->find("prompt_ids")->items();
        std::vector<ImagePlacement> placements;
        size_t image = 0;
        for (size_t t = 0; t < ids.size(); ++t) {
            if (ids[t].as_int() != image_token || (t > 0 && ids[t - 1].as_int() == image_token)) continue;
            const int which = static_cast<int>(prompt->find("images")->items()[image++].as_int());
            const Npy rgb = read_npy(dir + "/qwen2vl_image" + std::to_string(which) + ".npy");
            const RgbImageView view{int(rgb.shape[1]), int(rgb.shape[0]), rgb.u8.data(), rgb.u8.size()};
            placements.push_back({static_cast<int>(t), tower->plan(view, "image")});
        }
        const MropePositions mine = mrope_positions(static_cast<int>(ids.size()), placements);
        bool equal = mine.positions.size() == ids.size() * 3;
        for (size_t axis = 0; equal && axis < 3; ++axis)
            for (size_t t = 0; t < ids.size(); ++t)
                equal = equal && mine.positions[3 * t + axis] == prompt->find("positions")->items()[axis].items()[t].as_int();
        check(equal, "M-RoPE positions equal transformers' get_rope_index");
        check(mine.delta == prompt->find("rope_delta")->as_int(), "the rope delta equals transformers'");
        check(refused(VLLM_ERR_INVALID_ARGUMENT, "does not fit the prompt",
                      [&] { mrope_positions(static_cast<int>(ids.size()) - 20, placements); }),
              "an image run past the prompt refused");
    }

    // Which position each rotated pair follows: Qwen2.5-VL's sections [4, 6,
    // 6] as runs, Qwen3-VL's [6, 5, 5] interleaved (t h w t h w ...); with
    // three equal positions the angles are plain RoPE's.
    for (const char* name : {"qwen2vl", "qwen3vl"}) {
        GgufFile text(dir + "/" + name + ".gguf");
        const ModelConfig config = ModelConfig::from_source(text);
        RotaryAngles angles = RotaryAngles::global(config, ModelWeights{}, 0);
        std::string axes;
        for (uint8_t a : angles.pair_axis) axes += char('0' + a);
        const std::string want = std::string(name) == "qwen2vl" ? "0000111111222222" : "0120120120120120";
        check(axes == want, std::string(name) + ": pairs follow t/h/w as transformers' (got " + axes + ")");
        angles.fill_multimodal({7, 7, 7, 9, 9, 9});
        const std::vector<float> cos3 = angles.cos, sin3 = angles.sin;
        angles.fill({7, 9});
        check(cos3 == angles.cos && sin3 == angles.sin, std::string(name) + ": equal positions rotate as plain RoPE");
    }

    std::vector<uint8_t> strip(size_t(201) * 1 * 3, 128);
    const RgbImageView thin{201, 1, strip.data(), strip.size()};
    check(refused(VLLM_ERR_INVALID_ARGUMENT, "image 7: the aspect ratio 201x1 is past 200", [&] { tower->plan(thin, "image 7"); }),
          "an aspect ratio past 200 refused, naming the image");
    const RgbImageView empty{0, 5, strip.data(), 0};
    check(refused(VLLM_ERR_INVALID_ARGUMENT, "image 8: image size 0x5 has no pixels", [&] { tower->preprocess(empty, "image 8"); }),
          "an image without pixels refused, naming it");

    // transformers' smart_resize on sizes of every path (rounding halves to even).
    QwenImageProcessorConfig config;
    const std::array<int, 2> rounded = qwen_smart_resize(42, 70, config, "x");  // 1.5 and 2.5 factors: 56, 56
    check(rounded[0] == 56 && rounded[1] == 56, "smart_resize rounds halves to even, as Python's round()");
    const std::array<int, 2> big = qwen_smart_resize(4000, 3000, config, "x");
    check(int64_t(big[0]) * big[1] <= config.max_pixels && big[0] % 28 == 0 && big[1] % 28 == 0,
          "smart_resize keeps a large image under max_pixels");

    check(refused(VLLM_ERR_MODEL_LOAD, "projection_dim 64 differs from the language model's hidden size 32",
                  [&] { kQwen25VlVision.create(mmproj, 32); }),
          "a projector for another hidden size refused at load");
    return report();
}
