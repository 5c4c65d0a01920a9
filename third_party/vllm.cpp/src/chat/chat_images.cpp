// Chat's prompt with its images placed.
#include "chat/chat_images.h"

#include "engine/context_length.h"
#include "engine/image_prompt.h"

namespace vllm::chat {

std::shared_ptr<const ChatService::Prepared> with_images(const ChatService::Prepared& text_only,
                                                         std::vector<ImageInput> images, Engine& engine) {
    auto p = std::make_shared<ChatService::Prepared>(text_only);
    p->prompt_text = expand_image_markers(text_only.prompt_text, engine.vision_tower(), images);
    p->prompt_ids = engine.tokenizer().encode(p->prompt_text, /*add_special=*/false, /*parse_special=*/true);
    check_prompt_fits(p->prompt_ids.size(), engine.max_model_len());
    auto shared = std::make_shared<const std::vector<ImageInput>>(std::move(images));
    Engine* e = &engine;
    p->submit = [e, shared](std::vector<int32_t> ids, SamplingConfig sampling, int32_t priority) {
        return e->submit_tokens_with_images(std::move(ids), *shared, std::move(sampling), priority);
    };
    return p;
}

}  // namespace vllm::chat
