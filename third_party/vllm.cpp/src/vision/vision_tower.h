// The vision layer's interface: what a vision-language model's image side
// does with one image, whatever the family (Gemma 3's SigLIP + pooled
// projector, Qwen2.5-VL / Qwen3-VL's ViT + patch merger, ...).
//
//   RgbImageView --plan()--------> ImagePlan (how many placeholder tokens, grid)
//                --preprocess()--> PixelValues (resized, normalised, tiled as the
//                                  model's HF processor does it)
//                --encode()------> plan.num_tokens rows of the language model's
//                                  hidden size (the rows that replace the prompt's
//                                  placeholder tokens at the embedding step)
//
// The prompt side (which text marks an image, what it expands to) is the
// tower's too (ImagePromptFormat, expand_marker), because it follows the model's processor,
// not its language model. A tower is built by the vision registry
// (vision_registry.h) from a ModelSource that speaks llama.cpp's mmproj
// vocabulary (`clip.*` keys, `v.*` / `mm.*` tensor names): a GGUF mmproj
// file as stored, or a Hugging Face `*ForConditionalGeneration` directory
// translated into it by formats/.
//
// Ownership: the caller owns the image bytes (see image.h) and the output
// buffer; a tower owns its weights' views (the ModelSource must outlive it)
// and no per-image state, so one tower serves every request. encode() is
// not reentrant (scratch is the tower's): the engine calls it from its step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/thread_pool.h"
#include "vision/image.h"

namespace vllm {

// The grid an image is cut into, as the model's processor reports it:
// Qwen's image_grid_thw (temporal, height, width in patches before the
// spatial merge; the language model's M-RoPE positions are read from it);
// for towers with a fixed grid (Gemma 3: 1 x 16 x 16 soft tokens) the
// grid of the rows encode() returns.
struct ImageGrid {
    int t = 1;
    int h = 0;
    int w = 0;
};

// A tower's plan for one image, known before any pixel is touched (the
// scheduler budgets encoder work and the prompt is laid out from it).
struct ImagePlan {
    int num_tokens = 0;    // placeholder tokens in the prompt == rows encode() writes
    ImageGrid grid;        // see ImageGrid
    int spatial_merge = 1; // grid cells merged per side into one token (Qwen: 2; else 1)
    int64_t encoder_cost = 0;  // encoder positions (patches) it runs: the scheduler's encoder budget unit
};

// The encoder's input: float pixels as the HF processor's pixel_values
// (shape in its order, e.g. {3, 896, 896} for Gemma 3; {patches, C*T*P*P}
// for Qwen), with the plan they were made for.
struct PixelValues {
    std::vector<int64_t> shape;
    std::vector<float> data;
    ImagePlan plan;
};

// How the prompt holds an image. The chat template (or a user's prompt)
// writes `marker` once per image; the engine replaces the i-th marker's
// text by the tower's expand_marker(plan_i) before tokenizing (the HF
// processor's text expansion), then the positions holding
// `placeholder_token` (one run of plan.num_tokens per image, in order)
// receive the tower's rows.
struct ImagePromptFormat {
    std::string marker;             // Gemma 3: "<start_of_image>"; Qwen: "<|image_pad|>"
    std::string placeholder_token;  // each row's slot ("<image_soft_token>", "<|image_pad|>")
};

class VisionTower {
public:
    virtual ~VisionTower() = default;

    // The projector type it implements (`clip.projector_type`, e.g. "gemma3").
    virtual const std::string& name() const = 0;
    // The language model's hidden size: the width of every row encode() writes.
    virtual int output_dim() const = 0;
    virtual const ImagePromptFormat& prompt_format() const = 0;
    // The text a marker becomes for an image of this plan, e.g. Gemma 3's
    // "\n\n<start_of_image>" + 256 x "<image_soft_token>" + "<end_of_image>\n\n".
    virtual std::string expand_marker(const ImagePlan& plan) const = 0;

    // The plan for an image (check_rgb_image first; INVALID_ARGUMENT naming
    // `what` for an image this model cannot take, e.g. too small).
    virtual ImagePlan plan(const RgbImageView& image, const std::string& what) const = 0;
    // The processor's resize / rescale / normalise / patchify.
    virtual PixelValues preprocess(const RgbImageView& image, const std::string& what) const = 0;
    // pixels.plan.num_tokens * output_dim() floats into `rows`.
    virtual void encode(const PixelValues& pixels, ThreadPool& pool, float* rows) = 0;
};

}  // namespace vllm
