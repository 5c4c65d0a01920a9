// A vision tower's tensors read from its mmproj ModelSource (llama.cpp's
// `v.*` / `mm.*` names): matrices as the kernels read them (views into the
// mapped file, any supported type) and small vectors expanded to float. A
// missing tensor or a wrong shape is a MODEL_LOAD error naming it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "kernels/cpu/kernels.h"

namespace vllm {

class TowerWeights {
public:
    explicit TowerWeights(const ModelSource& source) : source_(source) {}

    bool has(const std::string& name) const { return source_.find_tensor(name) != nullptr; }
    // A [rows, cols] matrix (GGUF dims {cols, rows, ...}: a conv kernel's
    // trailing dims are folded into cols).
    kernels::QuantMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const;
    // The tensor's `n` elements as float (n must be all of them).
    std::vector<float> floats(const std::string& name, int64_t n) const;
    // A [rows, cols] matrix transposed into float rows of `rows`: [cols][rows]
    // (a projection stored input-major, as Gemma 3's mm.input_projection).
    std::vector<float> transposed(const std::string& name, int64_t rows, int64_t cols) const;

private:
    const GgufTensor& require(const std::string& name) const;
    [[noreturn]] void fail(const std::string& name, const std::string& why) const;

    const ModelSource& source_;
};

// A float matrix the kernels read: [rows][cols] floats in `data` (which must outlive it).
kernels::QuantMatrix float_matrix(const std::vector<float>& data, int64_t rows, int64_t cols);

}  // namespace vllm
