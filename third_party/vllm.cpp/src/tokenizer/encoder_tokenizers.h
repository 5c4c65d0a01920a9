// The tokenizers of encoder models, beside the decoders' BPE and
// SentencePiece: BERT's WordPiece (GGUF tokenizer.ggml.model "bert",
// wordpiece_tokenizer.h) and XLM-RoBERTa's Unigram ("t5", llama.cpp's UGM,
// unigram_tokenizer.h). Tokenizer::create and TokenizerData::from_gguf
// hand these models here.
#pragma once
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace vllm {

bool is_encoder_tokenizer_model(const std::string& model);

// The encoder keys of a GGUF vocabulary, with llama.cpp's defaults where
// a key is absent (BERT: [CLS] 101 first, [SEP] 102 last, [UNK] 100;
// Unigram: </s> last).
void read_encoder_gguf_keys(const GgufFile& file, TokenizerData& data);

// For Tokenizer::create, after its checks of the ids.
std::unique_ptr<Tokenizer> create_encoder_tokenizer(TokenizerData data);

}  // namespace vllm
