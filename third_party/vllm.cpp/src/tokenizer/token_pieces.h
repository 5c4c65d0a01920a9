// Token texts and the bytes they stand for, per vocabulary style: the
// byte-level alphabet (GPT-2 BPE), SentencePiece's U+2581 space escape, and
// the <0xNN> byte-fallback tokens.
#pragma once
#include <string>

namespace vllm {

// The byte of a "<0xNN>" token text (either hex case), or -1.
int byte_fallback_value(const std::string& text);

// Byte-level symbols back to bytes. A code point outside the alphabet
// passes through as UTF-8 (llama.cpp writes an "[UNK_BYTE_...]" marker).
std::string byte_level_to_bytes(const std::string& text);

// U+2581 ("▁") back to spaces.
std::string metaspace_to_spaces(const std::string& text);
// Spaces to U+2581: SentencePiece's whitespace escape before encoding.
std::string spaces_to_metaspace(const std::string& text);

}  // namespace vllm
