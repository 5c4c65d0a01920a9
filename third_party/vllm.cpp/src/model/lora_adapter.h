// A LoRA adapter (Hu et al.; Hugging Face PEFT's format) for the loaded base
// model: per layer and projection, the low-rank pair A [rank][in] and B
// [out][rank] whose product, scaled by alpha / rank (rsLoRA: alpha /
// sqrt(rank)), is added beside the base matmul (blocks/lora.h). Kept in
// float32 whatever the file's type (F32, F16, BF16), B transposed with the
// scale folded in, so a token's correction is two passes of its own:
// shrink (x A^T) then expand (* B^T), as vLLM's Punica kernels run them.
// Everything is checked against the base model at load: its architecture,
// each matrix's shape, the rank against max_lora_rank; a mismatch is a
// MODEL_LOAD error naming the adapter, the tensor and the shapes.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/weights.h"

namespace vllm {

// The projections an adapter may target: attention's q/k/v/o and the gated
// MLP's gate/up/down (a fused qkv or gate_up module is split into these).
enum class LoraTarget { Q, K, V, O, GATE, UP, DOWN };
constexpr int kLoraTargets = 7;

// One projection's pair; rank 0: the adapter leaves it alone.
struct LoraMatrices {
    int rank = 0;
    int64_t in = 0, out = 0;
    std::vector<float> a;          // [rank][in]
    std::vector<float> b_scaled;   // [rank][out]: B transposed, times the adapter's scale
};

struct LoraAdapter {
    std::string name;
    int32_t id = 0;
    std::string path;
    int rank = 0;          // the largest of its matrices' ranks
    float scale = 0.0f;    // alpha / rank (rsLoRA: alpha / sqrt(rank))
    std::vector<std::array<LoraMatrices, kLoraTargets>> layers;
    // Mixture-of-experts layers (PEFT's target_parameters on transformers'
    // fused expert banks): [layer][expert][gate, up, down]; empty: none.
    std::vector<std::vector<std::array<LoraMatrices, 3>>> experts;

    // Layer `layer`'s pair for `target`; nullptr when the adapter has none.
    const LoraMatrices* find(int layer, LoraTarget target) const {
        const LoraMatrices& m = layers[static_cast<size_t>(layer)][static_cast<int>(target)];
        return m.rank > 0 ? &m : nullptr;
    }
    // Expert `expert`'s pair for GATE, UP or DOWN in layer `layer`; nullptr when none.
    const LoraMatrices* find_expert(int layer, int expert, LoraTarget target) const {
        if (experts.empty() || experts[static_cast<size_t>(layer)].empty()) return nullptr;
        const LoraMatrices& m =
            experts[static_cast<size_t>(layer)][static_cast<size_t>(expert)][static_cast<int>(target) - static_cast<int>(LoraTarget::GATE)];
        return m.rank > 0 ? &m : nullptr;
    }
    size_t bytes() const;
};

// Reads a PEFT adapter directory (adapter_config.json and
// adapter_model.safetensors) for the model `config`/`weights`. Expert
// banks (target_parameters "mlp.experts.gate_up_proj" / "down_proj",
// Qwen-MoE layouts) are split per expert as PEFT's ParamWrapper does. Options the
// forward does not run (modules_to_save, DoRA, bias training, layer or
// rank patterns, ...) and target modules other than the projections above
// are refused by name. A base model whose GGUF file permuted its q/k rows
// for RoPE (llama.cpp's converter does for Llama-style models) gets the
// adapter's q/k B rows permuted the same way. Throws Error(VLLM_ERR_MODEL_LOAD) "LoRA adapter '<name>': <why>".
std::shared_ptr<const LoraAdapter> load_peft_adapter(const std::string& name, int32_t id, const std::string& dir,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank);

// Reads llama.cpp's LoRA GGUF (convert_lora_to_gguf.py: general.type
// "adapter", adapter.type "lora", adapter.lora.alpha; blk.N.<tensor>.weight.lora_a
// / .lora_b, q/k rows already as the GGUF base has them) for the same
// model, with the same checks; scale alpha / rank (1 without alpha), as llama.cpp.
std::shared_ptr<const LoraAdapter> load_gguf_adapter(const std::string& name, int32_t id, const std::string& path,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank);

// A path ending in ".gguf": load_gguf_adapter; else load_peft_adapter.
std::shared_ptr<const LoraAdapter> load_lora_adapter(const std::string& name, int32_t id, const std::string& dir,
                                                     const ModelConfig& config, const ModelWeights& weights,
                                                     int max_rank);

}  // namespace vllm
