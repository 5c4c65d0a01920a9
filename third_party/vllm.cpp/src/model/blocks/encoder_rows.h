// The ends of a BERT-shaped encoder without learned positions (nomic-bert's
// RoPE, jina-bert-v2's ALiBi): each token's embedding plus token type 0's
// row through the embedding LayerNorm, and the last layer's rows handed to
// the slices that pool them.
#pragma once
#include <vector>

#include "model/decoder_model.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// x: [the batch's tokens][dim].
void embed_with_token_type(const ModelWeights& w, const std::vector<SequenceSlice>& batch, int dim, float eps,
                           float* x, ThreadPool& pool);

// Each slice with hidden_rows gets its rows of x ([the batch's tokens][dim]) as they are.
void copy_hidden_rows(const std::vector<SequenceSlice>& batch, const float* x, int dim);

}  // namespace vllm
