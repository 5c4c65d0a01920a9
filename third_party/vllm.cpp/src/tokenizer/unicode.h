// Code point level helpers for the tokenizer: UTF-8 decoding the way
// llama.cpp decodes (so odd input splits the same), code point classes for
// the pre-tokenizer regexes, the GPT-2 byte-level alphabet, and the strict
// UTF-8 scanning the detokenizer needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/unicode_tables.h"

namespace vllm {

constexpr uint32_t kReplacementChar = 0xFFFD;

// The kClass* bits of a code point (0: none of letter, number,
// punctuation, whitespace).
uint8_t codepoint_class(uint32_t cpt);
// kCaseUpper (\p{Lu}, \p{Lt}), kCaseLower (\p{Ll}) or 0.
uint8_t letter_case(uint32_t cpt);

// Decodes like llama.cpp's unicode_cpts_from_utf8: a lead byte with the
// right number of continuation bytes is accepted even when overlong or a
// surrogate; anything else costs one byte and yields U+FFFD. Sequences
// beyond U+10FFFF (which llama.cpp throws on) also yield U+FFFD.
void decode_utf8_lenient(const std::string& text, std::vector<uint32_t>& cpts);

// GPT-2's byte-level alphabet: every byte stands for one printable code
// point, so token texts are valid UTF-8 whatever bytes they cover.
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a symbol stands for, or -1 for a code point outside the alphabet.
int codepoint_to_byte(uint32_t cpt);

// Appends [s, s + n) to `out` as valid UTF-8, each invalid sequence (its
// maximal subpart) replaced by one U+FFFD. Unless `final`, an incomplete
// sequence at the end is left alone. Returns the bytes consumed.
size_t append_repaired_utf8(const char* s, size_t n, bool final, std::string& out);

}  // namespace vllm
