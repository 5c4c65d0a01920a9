// Rotary position embedding (RoPE) and its variants: plain, linear
// scaling, Llama 3's per-pair frequency divisors (rope_freqs), YaRN,
// LongRoPE's short/long factor sets (Phi-3), and a second base for sliding
// layers (Gemma 3). Angles are computed once per forward for the batch's
// positions; rotate() turns one head vector with them.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/weights.h"

namespace vllm {

// RoPE angles for one base and scale: the frequency of each rotated pair,
// and per forward the cos/sin of every batch token's angles.
struct RotaryAngles {
    std::vector<float> inv_freq;
    float magnitude = 1.0f;       // cos and sin are scaled by it (attn_factor, YaRN)
    std::vector<float> cos, sin;  // [tokens][rope_dim / 2]

    // The model's global rotation (every layer's unless it has a sliding
    // base): the config's base, scaling and divisors. max_model_len (the
    // model's context length when <= 0) picks LongRoPE's factor set
    // (ModelConfig::long_rope_factors).
    static RotaryAngles global(const ModelConfig& c, const ModelWeights& w, int max_model_len);
    // Gemma 3/4's sliding layers: their own base (rope_theta_sliding) and
    // rotated dims (rope_dim_sliding, if set), no linear scaling, YaRN or
    // frequency divisors.
    static RotaryAngles sliding(const ModelConfig& c);

    // cos/sin of each position's angles.
    void fill(const std::vector<int32_t>& positions);

    // Multimodal RoPE (ModelConfig::rope_sections; empty without): the
    // position each rotated pair follows, 0 temporal, 1 height, 2 width.
    std::vector<uint8_t> pair_axis;
    // cos/sin of each token's angles, pair p by positions[3 t + pair_axis[p]]
    // (three positions per token).
    void fill_multimodal(const std::vector<int32_t>& positions);
};

// Rotates one head vector's first rope_dim elements by a token's angles
// (cs, sn: rope_dim / 2 each). HALVES pairs element p with p + rope_dim/2;
// ADJACENT_PAIRS with 2p+1.
inline void rotate(float* v, const float* cs, const float* sn, int pairs, bool halves) {
    for (int p = 0; p < pairs; ++p) {
        float* a = halves ? v + p : v + 2 * p;
        float* b = halves ? v + p + pairs : v + 2 * p + 1;
        const float x0 = *a, x1 = *b;
        *a = x0 * cs[p] - x1 * sn[p];
        *b = x0 * sn[p] + x1 * cs[p];
    }
}

}  // namespace vllm
