// The engine's image entry points (issue 46): the vision tower loaded beside
// the text model, a request's images checked and placed in its prompt.
#include <algorithm>
#include <array>

#include "engine/engine.h"
#include "engine/image_prompt.h"
#include "formats/gguf_reader.h"
#include "formats/hf_vision.h"
#include "util/error.h"
#include "util/utf8.h"
#include "vision/mrope_positions.h"
#include "vision/vision_registry.h"

namespace vllm {

namespace {
// The encoder cache's size: 64 MiB of rows (a Gemma 3 4B image is 2.5 MiB).
constexpr size_t kEncoderCacheFloats = (size_t(64) << 20) / sizeof(float);
}  // namespace

void Engine::load_vision() {
    if (config_.mmproj_path.empty()) {
        // A vision-language HF directory carries its own image side.
        if (!serves_generation_ || encoder_) return;
        if (!(mmproj_ = HfVisionSource::open(config_.model_path, &unsupported_vision_))) return;
    } else {
        if (!serves_generation_ || encoder_)
            throw_invalid_argument("mmproj: model \"" + model_name_ +
                                   "\" does not generate text; images go to vision-language models");
        mmproj_ = std::make_unique<GgufFile>(config_.mmproj_path);
    }
    vision_ = load_vision_tower(*mmproj_, model_->config().dim);
    const std::string& placeholder = vision_->prompt_format().placeholder_token;
    const std::vector<int32_t> ids = tokenizer_->encode(placeholder, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() != 1)
        throw_invalid_argument("mmproj: the vision tower's placeholder token \"" + placeholder + "\" is " +
                               std::to_string(ids.size()) + " tokens in model \"" + model_name_ +
                               "\"'s vocabulary, not one (is this mmproj for another model?)");
    image_placeholder_id_ = ids[0];
    if (config_.kv_transfer)
        throw_invalid_argument("mmproj with a kv_transfer_config is not supported (the connector's block hashes do "
                               "not carry the images)");
    core_->use_vision(vision_.get(), kEncoderCacheFloats, config_.max_num_batched_tokens);
}

const VisionTower& Engine::vision_tower() const {
    if (!vision_ && !unsupported_vision_.empty())
        throw_invalid_argument("model \"" + model_name_ + "\": the vision tower of " + unsupported_vision_ +
                               " is not supported (supported: Gemma3ForConditionalGeneration, or an mmproj GGUF of "
                               "projector type gemma3 or qwen2.5vl_merger); its text model runs without images");
    if (!vision_)
        throw_invalid_argument("model \"" + model_name_ + "\" is a text-only model: it takes no images (load a "
                               "vision-language model, or its mmproj file beside a text GGUF)");
    return *vision_;
}

ImageInput Engine::image_input(const RgbImageView& pixels, const std::string& what) const {
    return image_input_from_pixels(pixels, vision_tower(), what);
}

ImageInput Engine::image_embedding_input(const float* rows, int64_t n_rows, const std::string& what) const {
    const VisionTower& tower = vision_tower();  // refuses a text-only model by name
    ImageInput input = image_input_from_rows(rows, n_rows, model_->config().dim, what);
    // Whether the model attends over an image both ways is the tower's,
    // whatever made the rows: its plan of any (one-pixel) image says so.
    const uint8_t pixel[3] = {0, 0, 0};
    input.plan.bidirectional = tower.plan(RgbImageView{1, 1, pixel, 3}, what).bidirectional;
    return input;
}

std::vector<EncoderSpan> Engine::place_images(const std::vector<int32_t>& prompt_ids,
                                              const std::vector<ImageInput>& images) const {
    vision_tower();
    if (static_cast<int>(images.size()) > config_.limit_images_per_prompt)
        throw_invalid_argument("the request has " + std::to_string(images.size()) + " images, more than "
                               "limit_mm_per_prompt's " + std::to_string(config_.limit_images_per_prompt) +
                               " per prompt");
    for (size_t k = 0; k < images.size(); ++k)
        if (images[k].plan.bidirectional && images[k].plan.num_tokens > config_.max_num_batched_tokens)
            throw_invalid_argument("image " + std::to_string(k + 1) + " takes " +
                                   std::to_string(images[k].plan.num_tokens) +
                                   " tokens, prefilled in one step, more than max_num_batched_tokens " +
                                   std::to_string(config_.max_num_batched_tokens));
    return image_spans(prompt_ids, image_placeholder_id_, images);
}

MropePositions Engine::image_rope_positions(int n_tokens, const std::vector<EncoderSpan>& spans,
                                            const std::vector<ImageInput>& images) const {
    const std::array<int, 3>& sections = model_->config().rope_sections;
    if (spans.empty() || sections[0] + sections[1] + sections[2] == 0) return {};
    std::vector<ImagePlacement> placements;
    for (size_t k = 0; k < images.size(); ++k) {
        if (images[k].plan.grid.h == 0)
            throw_invalid_argument("image " + std::to_string(k + 1) + ": precomputed image embeddings are not "
                                   "supported on model \"" + model_name_ + "\" (its multimodal RoPE needs the "
                                   "image's grid); pass the image's pixels");
        placements.push_back(ImagePlacement{spans[k].offset, images[k].plan});
    }
    return mrope_positions(n_tokens, placements);
}

std::shared_ptr<RequestStream> Engine::submit_with_images(const std::string& prompt, std::vector<ImageInput> images,
                                                          SamplingConfig sampling, int32_t priority) {
    if (!utf8::is_valid(prompt)) throw_invalid_argument("prompt is not valid UTF-8");
    if (images.empty()) return submit(prompt, std::move(sampling), priority);
    const std::string expanded = expand_image_markers(prompt, vision_tower(), images);
    return submit_tokens_with_images(tokenizer_->encode(expanded, /*add_special=*/true, /*parse_special=*/true),
                                     std::move(images), std::move(sampling), priority);
}

}  // namespace vllm
