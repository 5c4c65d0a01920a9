// The ends of a decoder: token ids to embedding rows (dequantized from the
// stored type, optionally scaled: Gemma's sqrt(dim)), and the output head
// (final RMS norm and the vocabulary projection for the rows whose logits
// are wanted, then Granite's logit scale and the final soft-cap where the
// model has one: Gemma 2).
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace vllm {

// x: [tokens.size()][dim], each row times `scale` (none when it is 1).
void embed_tokens(const kernels::QuantMatrix& embedding, const std::vector<int32_t>& tokens, int dim, float* x,
                  float scale = 1.0f);

// x: the batch's embedded tokens [tokens][dim]: each slice's embedding_rows
// written over its rows (images' placeholder tokens).
void overwrite_embedding_rows(const std::vector<SequenceSlice>& batch, int dim, float* x);

// The embedding scale of models that scale it (Gemma): sqrt(dim), rounded
// to float as llama.cpp does.
float embedding_scale(int dim);

// x: the batch's final hidden rows [tokens][dim]. Each slice with
// hidden_rows set gets its rows through the final norm there (a pooling
// request's hidden states, what the output head would read).
void output_hidden_rows(const ModelConfig& c, const ModelWeights& w, const std::vector<SequenceSlice>& batch,
                        const float* x);

// x: the batch's final hidden rows [tokens][dim]. `logits` receives
// num_logits rows of w.output.rows floats per slice (see SequenceSlice).
void output_logits(const ModelConfig& c, const ModelWeights& w, const std::vector<SequenceSlice>& batch,
                   const float* x, ThreadPool& pool, std::vector<float>& logits);

}  // namespace vllm
