// Hugging Face `tokenizers` files (tokenizer.json) as a Tokenizer, for
// models that come as safetensors rather than GGUF. Two shapes are
// supported, the ones Llama-family models use:
//   - byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen 2): normalizer NFC or
//     none; pre-tokenizer ByteLevel, alone or after Digits or a Split whose
//     regex is one the GGUF pre-tokenizers implement; decoder ByteLevel.
//   - SentencePiece-style BPE (Llama 2, Mistral, Gemma): normalizer Replace
//     " " -> "▁" and/or Prepend "▁", or pre-tokenizer Metaspace; byte_fallback;
//     decoders Replace/ByteFallback/Fuse/Strip/Metaspace.
// added_tokens (matched as `tokenizers` matches them, added_vocabulary.h;
// special ones are control tokens, the others user-defined) and the
// post-processor's BOS/EOS (TemplateProcessing, RobertaProcessing,
// ByteLevel) are read too. Encoders' WordPiece (BertNormalizer,
// BertPreTokenizer, BertProcessing; wordpiece_tokenizer.h) is a third shape,
// and Unigram (Precompiled, Replace, WhitespaceSplit, Metaspace;
// unigram_tokenizer.h) a fourth.
// Anything else (WordLevel models, other normalizers, unknown
// Split regexes, BPE dropout) is refused at load with a MODEL_LOAD error
// naming the component and the file.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace vllm {

// What tokenizer_config.json says; unset fields leave the decision to
// tokenizer.json.
struct HfTokenizerOptions {
    std::string bos_token;  // "" = not given
    std::string eos_token;
    std::optional<bool> add_bos_token;
    std::optional<bool> add_eos_token;
    // generation_config.json's eos_token_id (one or a list): each ends generation.
    std::vector<int32_t> eos_token_ids;
};

// MODEL_LOAD error for a file that cannot be read, is not JSON, or uses
// something not supported (named).
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& path, const HfTokenizerOptions& options = {});

}  // namespace vllm
