#include "model/blocks/embedding.h"

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace vllm {

void embed_tokens(const kernels::QuantMatrix& embedding, const std::vector<int32_t>& tokens, int dim, float* x,
                  float scale) {
    for (size_t t = 0; t < tokens.size(); ++t) {
        float* row = x + t * dim;
        kernels::dequantize_row(embedding.type, embedding.data + size_t(tokens[t]) * embedding.row_bytes, row, dim);
        if (scale != 1.0f)
            for (int i = 0; i < dim; ++i) row[i] *= scale;
    }
}

void overwrite_embedding_rows(const std::vector<SequenceSlice>& batch, int dim, float* x) {
    int64_t first_row = 0;  // the slice's first row in x
    for (const SequenceSlice& s : batch) {
        for (int k = 0; k < s.n_embedding_rows; ++k) {
            const EmbeddingRows& e = s.embedding_rows[k];
            std::copy_n(e.rows, int64_t(e.count) * dim, x + (first_row + e.first) * dim);
        }
        first_row += s.n_tokens;
    }
}

float embedding_scale(int dim) { return std::sqrt(static_cast<float>(dim)); }

void output_hidden_rows(const ModelConfig& c, const ModelWeights& w, const std::vector<SequenceSlice>& batch,
                        const float* x) {
    int64_t row = 0;
    for (const SequenceSlice& s : batch) {
        if (s.hidden_rows != nullptr)
            for (int t = 0; t < s.n_tokens; ++t)
                kernels::rms_norm(&x[(row + t) * c.dim], w.output_norm.data(), s.hidden_rows + size_t(t) * c.dim, c.dim,
                                  c.rms_eps);
        row += s.n_tokens;
    }
}

void output_logits(const ModelConfig& c, const ModelWeights& w, const std::vector<SequenceSlice>& batch,
                   const float* x, ThreadPool& pool, std::vector<float>& logits) {
    // Final norm and output projection only for the rows whose logits are wanted.
    const int dim = c.dim;
    std::vector<float> last;
    int64_t row = 0, n_out = 0;
    for (const SequenceSlice& s : batch) {
        row += s.n_tokens;
        if (s.num_logits < 0 || s.num_logits > s.n_tokens)
            throw_runtime("internal error: a slice wants logits of " + std::to_string(s.num_logits) + " of its " +
                          std::to_string(s.n_tokens) + " tokens");
        for (int64_t t = row - s.num_logits; t < row; ++t, ++n_out) {
            last.resize((n_out + 1) * dim);
            kernels::rms_norm(&x[t * dim], w.output_norm.data(), &last[n_out * dim], dim, c.rms_eps);
        }
    }
    logits.resize(n_out * w.output.rows);
    if (n_out > 0) kernels::matmul(w.output, last.data(), n_out, logits.data(), pool);
    if (c.logit_scale != 1.0f)  // Granite divides its logits (llama.cpp: times 1 / logit_scale)
        for (float& v : logits) v *= 1.0f / c.logit_scale;
    if (c.final_softcap > 0.0f) kernels::soft_cap(logits.data(), static_cast<int64_t>(logits.size()), c.final_softcap);
}

}  // namespace vllm
