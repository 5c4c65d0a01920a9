// An RGB image as the engine takes it: width x height pixels, row-major,
// 3 bytes per pixel (R, G, B), rows packed (no stride). Image files are
// decoded by the caller (the Python layer uses Pillow; a C host its own
// codec): libvllm has no image codec. A view's bytes belong to the caller
// and are read only during the call they are passed to; whatever the engine
// keeps beyond it (a request's images) is copied into an RgbImage.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vllm {

// Largest side accepted, in pixels: larger images are refused before any
// allocation (a 100,000-pixel side is an error, not a 30 GB resize).
constexpr int kMaxImageSide = 16384;

struct RgbImageView {
    int width = 0;
    int height = 0;
    const uint8_t* rgb = nullptr;  // width * height * 3 bytes
    size_t nbytes = 0;             // the caller's buffer size, checked against width * height * 3
};

// An image the engine owns (a request's copy of its caller's pixels).
struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;

    RgbImageView view() const { return RgbImageView{width, height, rgb.data(), rgb.size()}; }
    // Checked (check_rgb_image) and copied.
    static RgbImage copy_of(const RgbImageView& image, const std::string& what);
};

// INVALID_ARGUMENT naming `what` (e.g. "image 2") unless 1 <= width, height
// <= kMaxImageSide, rgb is non-null and nbytes == width * height * 3.
void check_rgb_image(const RgbImageView& image, const std::string& what);

// The content hash that keys an image in the encoder cache and the prefix
// cache (its size and every byte): two different images never share
// cached rows or KV blocks unless their 64-bit hashes collide.
uint64_t image_content_hash(const RgbImageView& image);

}  // namespace vllm
