// The tokenizer.json normalizers this engine has, applied in the file's
// order to each piece of text between added tokens (and to the texts of
// normalized added tokens, which then match the normalized input).
#pragma once
#include <string>
#include <vector>

namespace vllm {

class HfNormalizer {
public:
    enum class Step {
        NFC,                // Unicode NFC (invalid UTF-8 bytes become U+FFFD first)
        PREPEND_METASPACE,  // Prepend "▁" to a non-empty text
        REPLACE_SPACES,     // Replace " " -> "▁"
    };

    void add(Step step) { steps_.push_back(step); }
    bool has(Step step) const;
    std::string apply(const std::string& text) const;

private:
    std::vector<Step> steps_;
};

}  // namespace vllm
