// Finds special-token texts in the input before any BPE, as llama.cpp's
// tokenizer_st_partition does: longest token text first, each cutting
// every occurrence out of the text fragments that are left. For GGUF
// vocabularies; tokenizer.json's added tokens match as `tokenizers` matches
// them (added_vocabulary.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vllm {

// token >= 0: that special token; token < 0: text bytes [begin, end).
struct Fragment {
    int32_t token;
    uint32_t begin;
    uint32_t end;
};

class SpecialTokenSplitter {
public:
    struct Special {
        int32_t id;
        std::string text;
        bool needs_parse_special;  // cut out only with parse_special
    };

    SpecialTokenSplitter() = default;
    // Control, user-defined and unknown tokens are special (types as
    // TokenType numbers, one per token).
    SpecialTokenSplitter(const std::vector<std::string>& tokens, const std::vector<int32_t>& types);

    // User-defined tokens are always cut out; control and unknown ones only
    // with parse_special (as in llama.cpp and Hugging Face tokenizers).
    void split(const std::string& text, bool parse_special, std::vector<Fragment>& out) const;

private:
    std::vector<Special> specials_;  // longest text first
};

}  // namespace vllm
