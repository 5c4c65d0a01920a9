// The tokenizer facade: built from GGUF metadata (or from a tokenizer.json,
// hf_tokenizer_json.h), it turns text into token ids (special tokens in the
// text are single tokens) and ids back into bytes. Byte-level BPE
// (`tokenizer.ggml.model == "gpt2"`) with the pre-tokenizer that
// `tokenizer.ggml.pre` names, SentencePiece (`"llama"`: score-ordered
// bigram merges with byte fallback), and Gemma 4's BPE over characters
// (`"gemma4"`, metaspace_bpe_tokenizer.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/special_tokens.h"
#include "util/string_table.h"

namespace vllm {

class GgufFile;

// Token types as GGUF stores them (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
    UNDEFINED = 0, NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6,
};

struct TokenizerData {
    std::string model;                 // tokenizer.ggml.model
    std::string pre;                   // tokenizer.ggml.pre ("" = default)
    std::vector<std::string> tokens;   // tokenizer.ggml.tokens
    std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (may be empty)
    std::vector<std::string> merges;   // tokenizer.ggml.merges ("a b")
    std::vector<float> scores;         // tokenizer.ggml.scores (SentencePiece; may be empty)
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t eot_id = -1;
    int32_t eom_id = -1;
    // More end-of-generation ids: a Hugging Face generation_config.json's
    // eos_token_id list (Llama 3: <|end_of_text|>, <|eom_id|>, <|eot_id|>).
    std::vector<int32_t> extra_eog_ids;
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    bool add_bos = false;
    bool add_eos = false;
    // SentencePiece: a space goes before the text at the start and after
    // each special token (tokenizer.ggml.add_space_prefix).
    bool add_space_prefix = false;

    // Encoders (encoder_tokenizers.h): BERT's separator token after the
    // text (tokenizer.ggml.seperator_token_id / add_sep_token), and its
    // normalizer's options (tokenizer.ggml.normalizer.*).
    int32_t sep_id = -1;
    bool add_sep = false;
    bool lowercase = true;
    bool strip_accents = true;
    // Unigram (llama.cpp's UGM, "t5"): SentencePiece's normalization rules
    // (tokenizer.ggml.precompiled_charsmap), remove_extra_whitespaces, and
    // spaces as U+2581.
    std::string precompiled_charsmap;
    bool remove_extra_whitespaces = false;
    bool escape_whitespaces = true;

    // Reads the tokenizer.ggml.* keys; MODEL_LOAD error when they are
    // missing or malformed.
    static TokenizerData from_gguf(const GgufFile& file);
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // MODEL_LOAD error for a model or pre-tokenizer this engine lacks,
    // naming it. By value: a temporary's vocabulary is moved in, not copied.
    static std::unique_ptr<Tokenizer> create(TokenizerData data);

    // add_special: prepend BOS / append EOS as the model's add_bos/add_eos
    // say. parse_special: control (and unknown) token texts in `text`
    // become single tokens; user-defined token texts always do, as in
    // llama.cpp.
    std::vector<int32_t> encode(const std::string& text, bool add_special, bool parse_special) const;

    // The raw bytes a token stands for (byte-level symbols mapped back to
    // bytes, SentencePiece's U+2581 back to a space, <0xNN> to its byte).
    // Control (and unknown) tokens give "" when skip_special, else their
    // text; user-defined tokens give their text. INVALID_ARGUMENT error for
    // an id outside the vocabulary.
    std::string token_bytes(int32_t id, bool skip_special) const { return std::string(token_view(id, skip_special)); }
    // The same bytes as a view into the tokenizer's table (valid while the
    // tokenizer lives): no copy.
    std::string_view token_view(int32_t id, bool skip_special) const;

    int32_t vocab_size() const { return static_cast<int32_t>(data_.tokens.size()); }
    int32_t bos_id() const { return data_.bos_id; }
    int32_t eos_id() const { return data_.eos_id; }
    // End-of-generation: EOS, EOT, EOM, or a token whose text llama.cpp
    // knows as an end-of-turn marker (<|im_end|>, <|endoftext|>, ...).
    bool is_eog(int32_t id) const;
    // The end-of-generation ids, sorted.
    const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
    const TokenizerData& data() const { return data_; }

protected:
    // Fills in token types (NORMAL when the GGUF has none), makes the
    // end-of-turn markers CONTROL as llama.cpp does, finds the EOG set and
    // the special tokens, matched as llama.cpp matches them.
    explicit Tokenizer(TokenizerData data);
    // From a tokenizer.json: its added tokens match as `tokenizers` matches
    // them, and the text between them is normalized before encode_text.
    Tokenizer(TokenizerData data, AddedVocabulary added);

    // Appends the ids of a piece of text between special tokens (every
    // piece starts the input or follows one); at_start: it starts the input.
    // From a tokenizer.json the piece is already normalized.
    virtual void encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const = 0;

    // Called by the subclass's constructor: the bytes of each token, with
    // `normal` giving those of a NORMAL token's text.
    void set_pieces(std::string (*normal)(const std::string& text));

    TokenizerData data_;

private:
    // Makes the end-of-turn markers CONTROL and collects the EOG ids.
    void find_end_of_generation();

    std::vector<int32_t> eog_ids_;  // sorted
    SpecialTokenSplitter specials_;       // GGUF
    std::optional<AddedVocabulary> added_;  // tokenizer.json
    // token_bytes(id, false) of every token, and whether skip_special
    // silences it (control and unknown tokens).
    StringTable pieces_;
    std::vector<bool> skippable_;
};

// Turns a stream of token ids into text deltas that never split a UTF-8
// code point: bytes of an incomplete sequence wait for the next token.
// Invalid sequences (which a byte-level model can emit) become U+FFFD.
class IncrementalDetokenizer {
public:
    IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true)
        : tokenizer_(tokenizer), skip_special_(skip_special) {}
    // Text completed by this token (may be "").
    std::string push(int32_t token);
    // Whatever is still pending at the end, repaired to valid UTF-8.
    std::string flush();

private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::string pending_;
};

}  // namespace vllm
