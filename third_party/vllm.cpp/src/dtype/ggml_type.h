// Tensor element types as GGUF numbers them (the ggml_type enum), with the
// block geometry every quantized format is laid out in.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace vllm {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
};

struct GgmlTypeInfo {
    const char* name;
    int64_t block_elements;  // elements per block (1 for float types)
    size_t block_bytes;      // bytes per block
    bool supported;          // has a dequantizer and dot product in this engine
};

// Info for a raw GGUF type number; nullptr when the number is unknown.
const GgmlTypeInfo* ggml_type_info(uint32_t type);

// Bytes taken by a row of n elements (n a multiple of block_elements).
size_t ggml_row_bytes(GgmlType type, int64_t n);

std::string ggml_type_name(uint32_t type);

}  // namespace vllm
