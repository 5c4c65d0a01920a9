// Base64 decoding (RFC 4648's standard alphabet, '=' padding optional), for
// binary data carried in JSON files (tokenizer.json's precompiled_charsmap).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace vllm {

// The decoded bytes, or nullopt for a character outside the alphabet or a
// length no encoding has.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace vllm
