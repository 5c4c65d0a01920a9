// Image markers expanded in the prompt text; placeholder runs found in its tokens.
#include "engine/image_prompt.h"

#include "util/error.h"

namespace vllm {

namespace {
std::string images_word(size_t n) { return std::to_string(n) + (n == 1 ? " image" : " images"); }
}  // namespace

std::string expand_image_markers(const std::string& prompt, const VisionTower& tower,
                                 const std::vector<ImageInput>& images) {
    const std::string& marker = tower.prompt_format().marker;
    std::string out;
    size_t from = 0, found = 0;
    for (size_t at; (at = prompt.find(marker, from)) != std::string::npos; from = at + marker.size(), ++found) {
        if (found >= images.size())
            throw_invalid_argument("the prompt has more image markers '" + marker + "' than the request's " +
                                   images_word(images.size()));
        out.append(prompt, from, at - from);
        out += tower.expand_marker(images[found].plan);
    }
    if (found != images.size())
        throw_invalid_argument("the prompt has " + std::to_string(found) + " image marker" + (found == 1 ? "" : "s") +
                               " '" + marker + "' for the request's " + images_word(images.size()) +
                               " (one marker per image, where the image goes)");
    out.append(prompt, from, std::string::npos);
    return out;
}

std::vector<EncoderSpan> image_spans(const std::vector<int32_t>& prompt_ids, int32_t placeholder_id,
                                     const std::vector<ImageInput>& images) {
    std::vector<EncoderSpan> spans;
    const int n = static_cast<int>(prompt_ids.size());
    for (int i = 0; i < n;) {
        if (prompt_ids[i] != placeholder_id) {
            ++i;
            continue;
        }
        int end = i;
        while (end < n && prompt_ids[end] == placeholder_id) ++end;
        const size_t k = spans.size();
        if (k >= images.size())
            throw_invalid_argument("the prompt has more image placeholder runs than the request's " +
                                   images_word(images.size()));
        if (end - i != images[k].plan.num_tokens)
            throw_invalid_argument("image " + std::to_string(k + 1) + " takes " +
                                   std::to_string(images[k].plan.num_tokens) + " placeholder tokens, the prompt has " +
                                   std::to_string(end - i) + " there");
        spans.push_back(EncoderSpan{i, end - i, images[k].plan.encoder_cost, images[k].content_hash,
                                    images[k].rows != nullptr, images[k].plan.bidirectional});
        i = end;
    }
    if (spans.size() != images.size())
        throw_invalid_argument("the prompt has " + std::to_string(spans.size()) + " image placeholder runs for the request's " +
                               images_word(images.size()));
    return spans;
}

}  // namespace vllm
