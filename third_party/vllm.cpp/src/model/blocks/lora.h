// The LoRA hook beside a base matmul (vLLM's Punica shrink/expand, on the
// CPU): out[t] += (x[t] A^T) B^T * scale for each token t whose sequence
// runs an adapter (SequenceSlice::lora) that targets this layer's
// projection. The batch's tokens are grouped by adapter and each token's
// correction is computed alone (fixed-order float32 sums over its own row),
// so a token's output does not depend on the batch it is in, nor on which
// other adapters share it. The base matmul is untouched (and stays in its
// quantized type); a batch without adapters costs one scan of its slices.
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder_model.h"
#include "model/lora_adapter.h"
#include "util/thread_pool.h"

namespace vllm {

// Where a block runs its projections: the batch and the layer (a gated
// MLP's hook; nullptr or a batch without adapters: none).
struct LoraSite {
    const std::vector<SequenceSlice>* batch = nullptr;
    int layer = 0;
};

// x: [n_tokens][in] (the projection's input rows, the batch's tokens in
// slice order), out: [n_tokens][out] (the base matmul's output rows).
void add_lora(const std::vector<SequenceSlice>& batch, int layer, LoraTarget target, const float* x, float* out,
              ThreadPool& pool);

// The same, at `site` (nothing when site is nullptr).
void add_lora(const LoraSite* site, LoraTarget target, const float* x, float* out, ThreadPool& pool);

// Whether any slice of the batch runs an adapter.
bool batch_has_lora(const std::vector<SequenceSlice>& batch);

}  // namespace vllm
