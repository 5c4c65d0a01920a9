// Images on the request road (issue 46): a request's images (the caller's
// pixels copied, or rows the caller computed), and the engine's encoder
// cache (vLLM's): a vision tower's rows kept by image content hash, so an
// image that several requests (or a repeated prompt) carry is encoded once,
// and a chunked prefill spanning an image encodes it once (the request
// keeps its rows for its life, whatever the cache evicts).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "vision/image.h"
#include "vision/vision_tower.h"

namespace vllm {

using EncoderRows = std::shared_ptr<const std::vector<float>>;

// One image of a request.
struct ImageInput {
    RgbImage image;    // empty when the caller gave rows
    ImagePlan plan;    // the tower's (or, for given rows, their count)
    uint64_t content_hash = 0;
    EncoderRows rows;  // given, or set once encoded / found in the cache
};

// An image from its pixels: checked, copied, planned, hashed. `what` names
// it in errors ("image 2").
ImageInput image_input_from_pixels(const RgbImageView& pixels, const VisionTower& tower, const std::string& what);
// An image the caller encoded: `n_rows` rows of `dim` floats (copied).
ImageInput image_input_from_rows(const float* rows, int64_t n_rows, int dim, const std::string& what);

// Rows by content hash, least recently used evicted past `capacity_floats`.
class EncoderCache {
public:
    explicit EncoderCache(size_t capacity_floats) : capacity_(capacity_floats) {}

    // The rows of `hash`, or nullptr; a hit becomes the most recent.
    EncoderRows find(uint64_t hash);
    void insert(uint64_t hash, EncoderRows rows);
    size_t size_floats() const { return used_; }

private:
    struct Entry {
        uint64_t hash;
        EncoderRows rows;
    };
    size_t capacity_;
    size_t used_ = 0;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
};

}  // namespace vllm
