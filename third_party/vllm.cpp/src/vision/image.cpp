// RgbImage checks, copies and content hash.
#include "vision/image.h"

#include <cstring>

#include "util/error.h"

namespace vllm {

void check_rgb_image(const RgbImageView& image, const std::string& what) {
    if (image.width <= 0 || image.height <= 0)
        throw_invalid_argument(what + ": image size " + std::to_string(image.width) + "x" +
                               std::to_string(image.height) + " has no pixels");
    if (image.width > kMaxImageSide || image.height > kMaxImageSide)
        throw_invalid_argument(what + ": image size " + std::to_string(image.width) + "x" +
                               std::to_string(image.height) + " is larger than " +
                               std::to_string(kMaxImageSide) + " pixels a side");
    if (image.rgb == nullptr) throw_invalid_argument(what + ": image has no pixel data");
    const size_t expected = size_t(image.width) * size_t(image.height) * 3;
    if (image.nbytes != expected)
        throw_invalid_argument(what + ": " + std::to_string(image.nbytes) + " bytes of pixel data for a " +
                               std::to_string(image.width) + "x" + std::to_string(image.height) +
                               " RGB image (expected " + std::to_string(expected) + ")");
}

RgbImage RgbImage::copy_of(const RgbImageView& image, const std::string& what) {
    check_rgb_image(image, what);
    RgbImage copy;
    copy.width = image.width;
    copy.height = image.height;
    copy.rgb.assign(image.rgb, image.rgb + image.nbytes);
    return copy;
}

uint64_t image_content_hash(const RgbImageView& image) {
    // FNV-1a over 8-byte words, then a final avalanche (splitmix64's):
    // fast enough for megapixel images, and mixes the size in first so
    // transposed shapes of the same bytes differ.
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t(uint32_t(image.width)) << 32 | uint32_t(image.height));
    const uint64_t prime = 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= image.nbytes; i += 8) {
        uint64_t word;
        std::memcpy(&word, image.rgb + i, 8);
        h = (h ^ word) * prime;
        h ^= h >> 29;
    }
    for (; i < image.nbytes; ++i) h = (h ^ image.rgb[i]) * prime;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

}  // namespace vllm
