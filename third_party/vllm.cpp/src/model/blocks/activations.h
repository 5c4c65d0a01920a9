// The scalar activations the layers apply element by element, written once
// so every architecture computes them with the same float expression (the
// goldens compare against transformers' formulas).
#pragma once
#include <cmath>

namespace vllm {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// x * sigmoid(x) (transformers' "silu").
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// GELU with the error function (transformers' "gelu", not the tanh form).
inline float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

}  // namespace vllm
