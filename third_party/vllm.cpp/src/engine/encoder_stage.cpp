// Images' rows made ready for a step: the request's own, the cache's, or encoded now.
#include "engine/encoder_stage.h"

#include <chrono>
#include <vector>

#include "util/error.h"

namespace vllm {

void EncoderStage::prepare(const ScheduledRequest& scheduled, Request& request, ThreadPool& pool) {
    SchedulerRequest& sched = request.sched;
    const int begin = sched.num_computed_tokens, end = begin + scheduled.num_new_tokens;
    for (size_t k = 0; k < sched.encoder_inputs.size(); ++k) {
        EncoderSpan& span = sched.encoder_inputs[k];
        if (span.offset >= end) break;
        if (span.offset + span.length <= begin) continue;
        ImageInput& image = request.images[k];
        if (!image.rows) {
            if ((image.rows = cache_.find(image.content_hash))) {
                ++stats_.encoder_cache_hits;
            } else {
                const auto start = std::chrono::steady_clock::now();
                PixelValues pixels = tower_.preprocess(image.image.view(), "image " + std::to_string(k + 1));
                auto rows = std::make_shared<std::vector<float>>(size_t(image.plan.num_tokens) * tower_.output_dim());
                tower_.encode(pixels, pool, rows->data());
                stats_.encode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                ++stats_.images_encoded;
                image.rows = rows;
                image.image = RgbImage{};  // the pixels are done with
                cache_.insert(image.content_hash, image.rows);
            }
        }
        span.has_rows = true;
    }
}

}  // namespace vllm
