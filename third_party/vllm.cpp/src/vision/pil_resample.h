// Pillow's Image.resize of an 8-bit RGB image, bit for bit: the Hugging
// Face image processors' PIL backend resizes with it (Qwen2-VL: bicubic;
// SigLIP / Gemma 3: bilinear), so the same pixels need the same
// arithmetic. Pillow resamples in two separable passes (horizontal, then
// vertical), each output pixel a weighted sum over the source pixels under
// the filter stretched by the scale when shrinking (antialiasing), with
// the weights in 22-bit fixed point and each pass rounded and clamped to
// 8 bits.
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

enum class PilFilter {
    BILINEAR,  // PIL.Image.Resampling.BILINEAR (2)
    BICUBIC,   // PIL.Image.Resampling.BICUBIC (3): Keys' cubic with a = -0.5
};

// `rgb` (width x height, packed R, G, B bytes) resized to out_width x
// out_height as Pillow's resize does (the whole image as the box, no
// reducing_gap); the same size returns a copy, as Pillow does.
std::vector<uint8_t> pil_resize_rgb(const uint8_t* rgb, int width, int height, int out_width, int out_height,
                                    PilFilter filter);

}  // namespace vllm
