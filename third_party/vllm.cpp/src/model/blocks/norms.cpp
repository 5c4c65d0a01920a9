#include "model/blocks/norms.h"

#include "kernels/cpu/ops.h"

#include <algorithm>
#include <cmath>

namespace vllm {

int64_t rows_per_chunk(int64_t row_floats) { return std::max<int64_t>(1, kMinParallelFloats / row_floats); }

void rms_norm_rows(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim, float eps,
                   ThreadPool& pool) {
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) kernels::rms_norm(x + r * dim, weight, out + r * dim, dim, eps);
        },
        rows_per_chunk(dim));
}

void add_rms_norm_rows(float* x, const float* y, const float* weight, float* out, int64_t n_rows, int64_t dim,
                       float eps, ThreadPool& pool) {
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                float* row = x + r * dim;
                const float* add = y + r * dim;
                for (int64_t i = 0; i < dim; ++i) row[i] += add[i];
                kernels::rms_norm(row, weight, out + r * dim, dim, eps);
            }
        },
        rows_per_chunk(dim));
}

void layer_norm_rows(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t dim,
                     float eps, ThreadPool& pool) {
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                const float* in = x + r * dim;
                float* o = out + r * dim;
                double mean = 0.0, var = 0.0;
                for (int64_t i = 0; i < dim; ++i) mean += in[i];
                mean /= dim;
                for (int64_t i = 0; i < dim; ++i) var += (in[i] - mean) * (in[i] - mean);
                const float inv = static_cast<float>(1.0 / std::sqrt(var / dim + eps));
                for (int64_t i = 0; i < dim; ++i)
                    o[i] = (in[i] - static_cast<float>(mean)) * inv * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
            }
        },
        rows_per_chunk(dim));
}

void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool) {
    pool.parallel_for(
        n,
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) x[i] += y[i];
        },
        kMinParallelFloats);
}

void add_bias_rows(float* rows, const std::vector<float>& bias, int64_t n) {
    const int64_t width = static_cast<int64_t>(bias.size());
    for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < width; ++i) rows[t * width + i] += bias[i];
}

}  // namespace vllm
