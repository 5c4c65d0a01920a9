// Base64 (RFC 4648's standard alphabet), for binary data carried in JSON:
// decoding tokenizer.json's precompiled_charsmap ('=' padding optional),
// encoding OpenAI's base64 embeddings (padded).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vllm {

// The decoded bytes, or nullopt for a character outside the alphabet or a
// length no encoding has.
std::optional<std::string> base64_decode(std::string_view text);

// `size` bytes at `data`, encoded with '=' padding.
std::string base64_encode(const void* data, size_t size);

}  // namespace vllm
