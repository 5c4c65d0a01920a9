// The LoRA hook beside a base matmul (vLLM's Punica shrink/expand, on the
// CPU): out[t] += (x[t] A^T) B^T * scale for each token t whose sequence
// runs an adapter (SequenceSlice::lora) that targets this layer's
// projection. The batch's tokens are grouped by adapter (Punica's
// segments), so an adapter's A and B are read once per step for all its
// tokens; each token's correction is still its own fixed-order float32 sums
// (shrink: one dot product per rank row; expand: rank-ordered axpys over
// fixed column blocks), so a token's output does not depend on the batch it
// is in, nor on which other adapters share it. The base matmul is untouched (and stays in its
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

// The experts' hook (blocks/moe.h): row i of x [n_rows][in] ran expert
// expert_of_row[i] for the batch's token token_of_row[i]; out [n_rows][out]
// gets that token's adapter's pair for (site's layer, that expert, target),
// each row on its own (batch invariance as above).
void add_expert_lora(const LoraSite* site, LoraTarget target, const int64_t* token_of_row,
                     const int32_t* expert_of_row, int64_t n_rows, const float* x, int64_t in, float* out,
                     int64_t out_width, ThreadPool& pool);

// Whether any slice of the batch runs an adapter.
bool batch_has_lora(const std::vector<SequenceSlice>& batch);

}  // namespace vllm
