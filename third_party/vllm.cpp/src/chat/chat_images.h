// A chat request with images (issue 46): its rendered prompt's image
// markers expanded as the model's processor does (engine/image_prompt.h),
// tokenized again, and its choices submitted with the images.
#pragma once
#include <memory>
#include <vector>

#include "chat/chat_service.h"
#include "engine/encoder_cache.h"
#include "engine/engine.h"

namespace vllm::chat {

// `text_only` (prepared with images.size() image parts) with `images`;
// `engine` must outlive the call's start (the choices are submitted there).
std::shared_ptr<const ChatService::Prepared> with_images(const ChatService::Prepared& text_only,
                                                         std::vector<ImageInput> images, Engine& engine);

}  // namespace vllm::chat
