// RMS norms and residual adds over a batch's rows of activations, shared
// out over the thread pool when there is enough work to share.
#pragma once
#include <cstdint>
#include <vector>

#include "util/thread_pool.h"

namespace vllm {

// Element-wise work below about this many floats runs on the calling thread
// alone (ThreadPool::parallel_for's min_chunk): a decode step's norms,
// residual adds and activations are a few thousand floats, and a parallel
// region costs more than that work.
constexpr int64_t kMinParallelFloats = 8192;

// Rows of row_floats floats per parallel chunk: at least kMinParallelFloats.
int64_t rows_per_chunk(int64_t row_floats);

// RMS-normalises each of n_rows rows of `dim` floats, in parallel (out may
// alias x).
void rms_norm_rows(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim, float eps,
                   ThreadPool& pool);

// The residual add and the next RMS norm in one pass over the rows:
// x += y, then out = rms_norm(x) * weight (out may alias y).
void add_rms_norm_rows(float* x, const float* y, const float* weight, float* out, int64_t n_rows, int64_t dim,
                       float eps, ThreadPool& pool);

// LayerNorm of each of n_rows rows of `dim` floats (mean and variance in
// double), times weight, plus bias unless it is nullptr (ModernBERT's have
// none); out may alias x. Encoders' norms.
void layer_norm_rows(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t dim,
                     float eps, ThreadPool& pool);

// x += y over n floats.
void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool);

// rows[t] += bias for the n rows of bias.size() floats (a biased projection's bias).
void add_bias_rows(float* rows, const std::vector<float>& bias, int64_t n);

}  // namespace vllm
