// The registry's entries, one family per file of this folder
// (model_registry.cpp lists them), and the forwards they share.
#pragma once
#include <memory>

#include "model/architecture.h"

namespace vllm {

extern const Architecture kLlamaArchitecture;    // llama.cpp
extern const Architecture kMistralArchitecture;  // llama.cpp
extern const Architecture kQwen2Architecture;    // qwen.cpp
extern const Architecture kQwen3Architecture;    // qwen.cpp
extern const Architecture kGemmaArchitecture;    // gemma.cpp
extern const Architecture kGemma2Architecture;   // gemma.cpp
extern const Architecture kGemma3Architecture;   // gemma.cpp
extern const Architecture kPhi3Architecture;     // phi3.cpp
extern const Architecture kQwen2MoeArchitecture;   // qwen_moe.cpp
extern const Architecture kQwen3MoeArchitecture;   // qwen_moe.cpp
extern const Architecture kOlmoeArchitecture;      // olmoe.cpp
extern const Architecture kGraniteMoeArchitecture; // granite_moe.cpp
extern const Architecture kGptOssArchitecture;     // gpt_oss.cpp
extern const Architecture kSmolLm3Architecture;    // smollm3.cpp
extern const Architecture kOlmo2Architecture;      // olmo2.cpp
extern const Architecture kGraniteArchitecture;    // granite.cpp
extern const Architecture kGlm4Architecture;       // glm4.cpp
extern const Architecture kGemma4Architecture;     // gemma4.cpp
extern const Architecture kDeepseek2Architecture;  // deepseek2.cpp
extern const Architecture kQwen35Architecture;     // qwen35.cpp
extern const Architecture kQwen35MoeArchitecture;  // qwen35.cpp
extern const Architecture kBertArchitecture;       // bert.cpp
extern const Architecture kQwen2VlArchitecture;    // qwen.cpp
extern const Architecture kQwen3VlArchitecture;    // qwen.cpp

// Llama's pre-norm decoder (llama.cpp), which the families that differ
// from Llama only inside its blocks (a qkv bias, q/k norms, fused
// matrices, RoPE variants) run too.
std::unique_ptr<DecoderModel> build_llama_decoder(ModelConfig config, ModelWeights weights, int max_model_len);

// Granite's decoder (granite_moe.cpp): Llama's with its residual multiplier.
std::unique_ptr<DecoderModel> build_granite_decoder(ModelConfig config, ModelWeights weights, int max_model_len);
// Gemma 2's layer without its embedding scale (gemma.cpp): each sublayer's
// output normalised before its residual add (GLM-4; OLMo 2 without pre-norms).
std::unique_ptr<DecoderModel> build_sandwich_decoder(ModelConfig config, ModelWeights weights, int max_model_len);

}  // namespace vllm
