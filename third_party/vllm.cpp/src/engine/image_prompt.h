// A prompt's room for its images (issue 46), as the model's HF processor
// makes it: the i-th image marker of the prompt text expanded to the
// tower's placeholder text for image i (then tokenized as usual), and the
// tokenized prompt's placeholder runs matched to the images in order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/scheduler_request.h"
#include "engine/encoder_cache.h"
#include "vision/vision_tower.h"

namespace vllm {

// `prompt` with its image markers expanded; INVALID_ARGUMENT when the
// number of markers differs from the number of images.
std::string expand_image_markers(const std::string& prompt, const VisionTower& tower,
                                 const std::vector<ImageInput>& images);

// One EncoderSpan per image: the runs of `placeholder_id` in `prompt_ids`,
// in order, each as long as its image's plan. INVALID_ARGUMENT when the
// runs and the images do not match (count or length).
std::vector<EncoderSpan> image_spans(const std::vector<int32_t>& prompt_ids, int32_t placeholder_id,
                                     const std::vector<ImageInput>& images);

}  // namespace vllm
