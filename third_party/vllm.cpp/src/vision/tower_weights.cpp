// Reading a vision tower's tensors: matrices in place, vectors as floats.
#include "vision/tower_weights.h"

#include "dtype/ggml_type.h"
#include "util/error.h"

namespace vllm {

const GgufTensor& TowerWeights::require(const std::string& name) const {
    const GgufTensor* t = source_.find_tensor(name);
    if (t == nullptr) fail(name, "is missing");
    const GgmlTypeInfo* info = ggml_type_info(t->type);
    if (info == nullptr || !info->supported) fail(name, "has unsupported tensor type " + ggml_type_name(t->type));
    return *t;
}

void TowerWeights::fail(const std::string& name, const std::string& why) const {
    source_.fail("vision tensor '" + name + "' " + why);
}

kernels::QuantMatrix TowerWeights::matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensor& t = require(name);
    if (t.dims.empty() || t.elements() != rows * cols || t.dims.back() != rows)
        fail(name, "has " + std::to_string(t.elements()) + " elements, expected " + std::to_string(rows) + " rows of " +
                       std::to_string(cols));
    kernels::QuantMatrix m;
    m.type = static_cast<GgmlType>(t.type);
    m.data = t.data;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = ggml_row_bytes(m.type, cols);
    if (m.row_bytes * size_t(rows) != t.nbytes) fail(name, "rows do not split into whole blocks of its type");
    return m;
}

std::vector<float> TowerWeights::floats(const std::string& name, int64_t n) const {
    const GgufTensor& t = require(name);
    if (t.elements() != n) fail(name, "has " + std::to_string(t.elements()) + " elements, expected " + std::to_string(n));
    std::vector<float> out(static_cast<size_t>(n));
    kernels::dequantize_row(static_cast<GgmlType>(t.type), t.data, out.data(), n);
    return out;
}

std::vector<float> TowerWeights::transposed(const std::string& name, int64_t rows, int64_t cols) const {
    const std::vector<float> m = floats(name, rows * cols);
    std::vector<float> out(m.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = m[r * cols + c];
    return out;
}

kernels::QuantMatrix float_matrix(const std::vector<float>& data, int64_t rows, int64_t cols) {
    kernels::QuantMatrix m;
    m.type = GgmlType::F32;
    m.data = reinterpret_cast<const uint8_t*>(data.data());
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = size_t(cols) * sizeof(float);
    return m;
}

}  // namespace vllm
