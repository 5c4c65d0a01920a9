// Pre-tokenization: splitting text into the words BPE merges within, as
// the regexes `tokenizer.ggml.pre` names. The regexes are hand-written
// matchers that reproduce llama.cpp's (unicode.cpp) split for split,
// including its quirks, since a different split is a different prompt.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vllm {

enum class PreTokenizerKind {
    // llama.cpp's fallback: punctuation runs, then GPT-2, then number runs,
    // then groups of three ASCII digits.
    DEFAULT,
    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    GPT2,
    // Every \p{N} on its own, then GPT-2 (smollm, starcoder, ...).
    GPT2_SINGLE_DIGITS,
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
    //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    LLAMA3,
    // LLAMA3 with \p{N} instead of \p{N}{1,3} (qwen2, ...).
    QWEN2,
    // DEFAULT without the number-run pass, the backtick counted as
    // punctuation.
    FALCON,
    // [\r\n], \s?<Latin/Greek/Cyrillic/... letters>+, \s?<ASCII and
    // full-width punctuation>+, \s+$, <CJK and Hangul>+, \p{N}+.
    DEEPSEEK_LLM,
    // [\r\n], \s?\p{L}+, \s?\p{P}+, <CJK and Hangul>+, \p{N}.
    DEEPSEEK_CODER,
    // \p{N}{1,3}, <CJK ideographs and kana>+, then
    // [ASCII punct][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
    //  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    DEEPSEEK3,
    // Mistral's: [^\r\n\p{L}\p{N}]?<upper>*<lower>+|[^\r\n\p{L}\p{N}]?<upper>+<lower>*|
    // \p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    // where a non-ASCII letter is both upper and lower case.
    TEKKEN,
    // QWEN2 with marks joining letters (qwen35):
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
    //  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    QWEN35,
    // GPT-4o's (o200k: gpt-oss, Phi-4-mini, Llama 4), with Unicode case:
    // [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+<contraction>?|
    // [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*<contraction>?|
    // \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    GPT4O,
    // Kimi-K2's, as llama.cpp's hand-written splitter has it: \p{Han}+, then
    // LLAMA3 with letters that are not Han (no case split, no marks) and an
    // optional contraction after each word.
    KIMI_K2,
};

struct PreTokenizerSpec {
    PreTokenizerKind kind = PreTokenizerKind::DEFAULT;
    // A word that is a whole token is taken as is, without merging.
    bool ignore_merges = false;
    // add_bos when the GGUF does not say.
    bool add_bos_default = false;
};

// The spec llama.cpp gives a `tokenizer.ggml.pre` name ("" is DEFAULT);
// false for a name this engine does not know.
bool find_pretokenizer(const std::string& name, PreTokenizerSpec& spec);

// A word: bytes [begin, end) of the normalized text.
struct Word {
    uint32_t begin;
    uint32_t end;
};

class PreTokenizer {
public:
    explicit PreTokenizer(PreTokenizerKind kind) : kind_(kind) {}

    // `normalized` receives `text` with each invalid UTF-8 byte replaced by
    // U+FFFD (as llama.cpp does before splitting); `words` cover it in
    // order.
    void split(const std::string& text, std::string& normalized, std::vector<Word>& words) const;

private:
    PreTokenizerKind kind_;
};

}  // namespace vllm
