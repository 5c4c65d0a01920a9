// Unicode Normalization Form C (canonical decomposition, canonical order,
// canonical composition), for tokenizer.json's NFC normalizer (Qwen 2), and
// Form D (without the composition).
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

// Replaces `cpts` by their NFC form.
void nfc_normalize(std::vector<uint32_t>& cpts);
// Replaces `cpts` by their NFD form (canonical decomposition and order):
// BERT's strip_accents decomposes before dropping the marks.
void nfd_normalize(std::vector<uint32_t>& cpts);

}  // namespace vllm
