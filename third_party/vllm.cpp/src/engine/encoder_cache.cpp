// A request's images made ready for the road, and the encoder cache's LRU.
#include "engine/encoder_cache.h"

#include <cstring>
#include <string>

#include "util/error.h"

namespace vllm {

ImageInput image_input_from_pixels(const RgbImageView& pixels, const VisionTower& tower, const std::string& what) {
    ImageInput input;
    input.image = RgbImage::copy_of(pixels, what);
    input.plan = tower.plan(input.image.view(), what);
    input.content_hash = image_content_hash(input.image.view());
    return input;
}

ImageInput image_input_from_rows(const float* rows, int64_t n_rows, int dim, const std::string& what) {
    if (rows == nullptr || n_rows <= 0)
        throw_invalid_argument(what + ": image embeddings need at least one row of " + std::to_string(dim) + " floats");
    if (n_rows > (int64_t(1) << 20)) throw_invalid_argument(what + ": " + std::to_string(n_rows) + " embedding rows is too many");
    ImageInput input;
    auto copy = std::make_shared<std::vector<float>>(rows, rows + n_rows * dim);
    input.plan.num_tokens = static_cast<int>(n_rows);
    input.plan.grid = ImageGrid{1, 1, static_cast<int>(n_rows)};
    // The rows' bytes, hashed as a 1-pixel-high "image" of their bytes: a
    // given embedding and a picture never share a hash space by accident of
    // layout (the height differs), and equal rows share cached KV.
    RgbImageView as_bytes{static_cast<int>(n_rows), 1, reinterpret_cast<const uint8_t*>(copy->data()),
                          copy->size() * sizeof(float)};
    input.content_hash = image_content_hash(as_bytes) ^ 0x5bd1e995ull;
    input.rows = std::move(copy);
    return input;
}

EncoderRows EncoderCache::find(uint64_t hash) {
    auto it = index_.find(hash);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->rows;
}

void EncoderCache::insert(uint64_t hash, EncoderRows rows) {
    if (!rows || index_.count(hash) || rows->size() > capacity_) return;
    used_ += rows->size();
    lru_.push_front(Entry{hash, std::move(rows)});
    index_[hash] = lru_.begin();
    while (used_ > capacity_) {
        used_ -= lru_.back().rows->size();
        index_.erase(lru_.back().hash);
        lru_.pop_back();
    }
}

}  // namespace vllm
