// The step's encoder stage (issue 46): before the forward, every image a
// scheduled chunk reaches gets its rows, from the request itself (given or
// encoded earlier: a chunked prefill spanning the image encodes it once),
// from the encoder cache (the same image in another request), or from the
// vision tower (preprocess + encode, counted and timed for stats).
#pragma once
#include <cstdint>
#include <functional>

#include "core/scheduler_output.h"
#include "engine/encoder_cache.h"
#include "engine/request.h"
#include "util/thread_pool.h"
#include "vision/vision_tower.h"

namespace vllm {

struct EncoderStats {
    int64_t images_encoded = 0;       // tower runs
    int64_t encoder_cache_hits = 0;   // images whose rows another request had made
    double encode_seconds = 0;        // preprocess + encode, all images
};

class EncoderStage {
public:
    EncoderStage(VisionTower& tower, size_t cache_floats) : tower_(tower), cache_(cache_floats) {}

    // Rows for every image that `scheduled`'s chunks reach (marking their
    // spans has_rows). A failed encode throws: the request fails alone.
    void prepare(const ScheduledRequest& scheduled, Request& request, ThreadPool& pool);
    const EncoderStats& stats() const { return stats_; }

private:
    VisionTower& tower_;
    EncoderCache cache_;
    EncoderStats stats_;
};

}  // namespace vllm
