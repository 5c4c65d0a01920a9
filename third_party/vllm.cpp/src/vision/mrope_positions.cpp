// transformers' get_rope_index for images (see mrope_positions.h).
#include "vision/mrope_positions.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace vllm {

MropePositions mrope_positions(int n_tokens, const std::vector<ImagePlacement>& images) {
    MropePositions out;
    out.positions.reserve(size_t(n_tokens) * 3);
    int32_t next = 0;  // the next text token's position
    int index = 0;     // the next token's index
    const auto text_until = [&](int end) {
        for (; index < end; ++index, ++next) out.positions.insert(out.positions.end(), {next, next, next});
    };
    for (const ImagePlacement& image : images) {
        const int merge = std::max(1, image.plan.spatial_merge);
        const int rows = image.plan.grid.h / merge, cols = image.plan.grid.w / merge, frames = image.plan.grid.t;
        if (image.first < index || rows <= 0 || cols <= 0 || frames != 1 ||
            rows * cols != image.plan.num_tokens || image.first + image.plan.num_tokens > n_tokens)
            throw_invalid_argument("an image's placeholder run (tokens " + std::to_string(image.first) + " to " +
                                   std::to_string(image.first + image.plan.num_tokens) +
                                   ") does not fit the prompt of " + std::to_string(n_tokens) +
                                   " tokens after the one before it, or its grid");
        text_until(image.first);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) out.positions.insert(out.positions.end(), {next, next + r, next + c});
        index += rows * cols;
        next += std::max(rows, cols);
    }
    text_until(n_tokens);
    out.delta = next - n_tokens;
    return out;
}

}  // namespace vllm
