// Unicode Normalization Form C (canonical decomposition, canonical order,
// canonical composition), for tokenizer.json's NFC normalizer (Qwen 2).
#pragma once
#include <cstdint>
#include <vector>

namespace vllm {

// Replaces `cpts` by their NFC form.
void nfc_normalize(std::vector<uint32_t>& cpts);

}  // namespace vllm
