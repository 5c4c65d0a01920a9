#include "dtype/ggml_type.h"

#include <iterator>

namespace vllm {

namespace {

constexpr int64_t QK = 32;    // elements per block of the classic formats
constexpr int64_t QK_K = 256; // elements per super-block of the K-quants and most IQ formats

struct TypeEntry {
    GgmlType type;
    GgmlTypeInfo info;
};

// Every type a GGUF file may hold, supported or not: the geometry lets the
// reader size (and the loader name) a tensor it has no kernels for.
constexpr TypeEntry kTypes[] = {
    {GgmlType::F32, {"F32", 1, 4, true}},
    {GgmlType::F16, {"F16", 1, 2, true}},
    {GgmlType::BF16, {"BF16", 1, 2, true}},
    {GgmlType::Q4_0, {"Q4_0", QK, 2 + QK / 2, true}},
    {GgmlType::Q4_1, {"Q4_1", QK, 4 + QK / 2, true}},
    {GgmlType::Q5_0, {"Q5_0", QK, 2 + 4 + QK / 2, true}},
    {GgmlType::Q5_1, {"Q5_1", QK, 4 + 4 + QK / 2, true}},
    {GgmlType::Q8_0, {"Q8_0", QK, 2 + QK, true}},
    {GgmlType::Q8_1, {"Q8_1", QK, 4 + QK, false}},
    {GgmlType::Q2_K, {"Q2_K", QK_K, QK_K / 16 + QK_K / 4 + 4, true}},
    {GgmlType::Q3_K, {"Q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2, true}},
    {GgmlType::Q4_K, {"Q4_K", QK_K, 4 + 12 + QK_K / 2, true}},
    {GgmlType::Q5_K, {"Q5_K", QK_K, 4 + 12 + QK_K / 8 + QK_K / 2, true}},
    {GgmlType::Q6_K, {"Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, true}},
    {GgmlType::Q8_K, {"Q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2, false}},
    {GgmlType::IQ4_NL, {"IQ4_NL", QK, 2 + QK / 2, true}},
    {GgmlType::IQ4_XS, {"IQ4_XS", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2, true}},
    {GgmlType::IQ2_XXS, {"IQ2_XXS", QK_K, 2 + QK_K / 4, true}},
    {GgmlType::IQ2_XS, {"IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, true}},
    {GgmlType::IQ2_S, {"IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, true}},
    {GgmlType::IQ3_XXS, {"IQ3_XXS", QK_K, 2 + 3 * QK_K / 8, true}},
    {GgmlType::IQ3_S, {"IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, true}},
    {GgmlType::IQ1_S, {"IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, true}},
    {GgmlType::IQ1_M, {"IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, true}},
    {GgmlType::TQ1_0, {"TQ1_0", QK_K, 2 + 4 * 13, true}},
    {GgmlType::TQ2_0, {"TQ2_0", QK_K, 2 + QK_K / 4, true}},
    {GgmlType::MXFP4, {"MXFP4", QK, 1 + QK / 2, true}},
    // 64 elements: four UE4M3 scales, one per 16, and 32 bytes of E2M1 nibbles.
    {GgmlType::NVFP4, {"NVFP4", 64, 4 + 32, false}},
};

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
    for (const TypeEntry& e : kTypes)
        if (static_cast<uint32_t>(e.type) == type) return &e.info;
    return nullptr;
}

size_t ggml_row_bytes(GgmlType type, int64_t n) {
    const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(type));
    return static_cast<size_t>(n / info->block_elements) * info->block_bytes;
}

std::string ggml_type_name(uint32_t type) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info ? info->name : "type#" + std::to_string(type);
}

}  // namespace vllm
