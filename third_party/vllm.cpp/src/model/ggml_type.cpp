#include "model/ggml_type.h"

namespace vllm {

namespace {
constexpr int64_t QK = 32;    // elements per block of the classic formats
constexpr int64_t QK_K = 256; // elements per super-block of the K-quants
}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
    static const GgmlTypeInfo f32{"F32", 1, 4, true};
    static const GgmlTypeInfo f16{"F16", 1, 2, true};
    static const GgmlTypeInfo bf16{"BF16", 1, 2, true};
    static const GgmlTypeInfo q4_0{"Q4_0", QK, 2 + QK / 2, true};
    static const GgmlTypeInfo q4_1{"Q4_1", QK, 4 + QK / 2, true};
    static const GgmlTypeInfo q5_0{"Q5_0", QK, 2 + 4 + QK / 2, true};
    static const GgmlTypeInfo q5_1{"Q5_1", QK, 4 + 4 + QK / 2, true};
    static const GgmlTypeInfo q8_0{"Q8_0", QK, 2 + QK, true};
    static const GgmlTypeInfo q8_1{"Q8_1", QK, 4 + QK, false};
    static const GgmlTypeInfo q2_k{"Q2_K", QK_K, QK_K / 16 + QK_K / 4 + 4, true};
    static const GgmlTypeInfo q3_k{"Q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2, true};
    static const GgmlTypeInfo q4_k{"Q4_K", QK_K, 4 + 12 + QK_K / 2, true};
    static const GgmlTypeInfo q5_k{"Q5_K", QK_K, 4 + 12 + QK_K / 8 + QK_K / 2, true};
    static const GgmlTypeInfo q6_k{"Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, true};
    static const GgmlTypeInfo q8_k{"Q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2, false};
    static const GgmlTypeInfo iq4_nl{"IQ4_NL", QK, 2 + QK / 2, true};
    static const GgmlTypeInfo iq4_xs{"IQ4_XS", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2, true};
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32: return &f32;
        case GgmlType::F16: return &f16;
        case GgmlType::BF16: return &bf16;
        case GgmlType::Q4_0: return &q4_0;
        case GgmlType::Q4_1: return &q4_1;
        case GgmlType::Q5_0: return &q5_0;
        case GgmlType::Q5_1: return &q5_1;
        case GgmlType::Q8_0: return &q8_0;
        case GgmlType::Q8_1: return &q8_1;
        case GgmlType::Q2_K: return &q2_k;
        case GgmlType::Q3_K: return &q3_k;
        case GgmlType::Q4_K: return &q4_k;
        case GgmlType::Q5_K: return &q5_k;
        case GgmlType::Q6_K: return &q6_k;
        case GgmlType::Q8_K: return &q8_k;
        case GgmlType::IQ4_NL: return &iq4_nl;
        case GgmlType::IQ4_XS: return &iq4_xs;
    }
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
