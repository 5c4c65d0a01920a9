#include "model/blocks/encoder_rows.h"

#include <algorithm>

#include "kernels/cpu/kernels.h"
#include "model/blocks/norms.h"

namespace vllm {

void embed_with_token_type(const ModelWeights& w, const std::vector<SequenceSlice>& batch, int dim, float eps,
                           float* x, ThreadPool& pool) {
    const kernels::QuantMatrix& tok = w.token_embedding;
    int64_t row = 0;
    for (const SequenceSlice& s : batch)
        for (int t = 0; t < s.n_tokens; ++t, ++row) {
            float* out = x + row * dim;
            kernels::dequantize_row(tok.type, tok.data + size_t(s.tokens[t]) * tok.row_bytes, out, dim);
            kernels::axpy_f32(1.0f, w.token_type_row.data(), out, dim);
        }
    layer_norm_rows(x, w.embedding_norm.data(), w.embedding_norm_bias.data(), x, row, dim, eps, pool);
}

void copy_hidden_rows(const std::vector<SequenceSlice>& batch, const float* x, int dim) {
    int64_t row = 0;
    for (const SequenceSlice& s : batch) {
        if (s.hidden_rows != nullptr) std::copy_n(x + row * dim, size_t(s.n_tokens) * dim, s.hidden_rows);
        row += s.n_tokens;
    }
}

}  // namespace vllm
