#include "model/blocks/rotary.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

// theta_i = freq_scale * base^(-2i / rope_dim) / rope_freqs[i] (llama.cpp's
// rope with freq_factors and linear scaling; the divisors are Llama 3's
// rope_freqs or one of LongRoPE's factor sets); with `yarn`, YaRN's blend of
// that and the unscaled base^(-2i / rope_dim) (ModelConfig::yarn_*).
std::vector<float> inv_frequencies(const ModelConfig& c, double base, double freq_scale, bool yarn,
                                   const std::vector<float>& rope_freqs) {
    // The pair that makes `rotations` turns over the original context.
    const auto pair_of = [&](double rotations) {
        const double two_pi = 2.0 * std::acos(-1.0);
        return c.rope_dim * std::log(c.yarn_original_context / (rotations * two_pi)) / (2.0 * std::log(base));
    };
    double low = 0.0, high = 0.0;
    if (yarn) {
        low = pair_of(c.yarn_beta_fast), high = pair_of(c.yarn_beta_slow);
        if (c.yarn_truncate) low = std::floor(low), high = std::ceil(high);
        low = std::max(0.0, low), high = std::min(double(c.rope_dim - 1), high);
    }
    std::vector<float> inv_freq(c.rope_dim / 2);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        const double original = std::pow(base, -2.0 * double(i) / c.rope_dim);
        double f = freq_scale * original;
        if (yarn) {
            // 1 for pairs below `low` (they keep the original), 0 above `high`.
            const double keep = 1.0 - std::clamp((double(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
            const double mix = keep * c.yarn_ext_factor;
            f = f * (1.0 - mix) + original * mix;
        }
        if (!rope_freqs.empty()) f /= rope_freqs[i];
        inv_freq[i] = static_cast<float>(f);
    }
    return inv_freq;
}

}  // namespace

RotaryAngles RotaryAngles::global(const ModelConfig& c, const ModelWeights& w, int max_model_len) {
    const bool yarn = c.yarn_original_context > 0;
    if (max_model_len <= 0) max_model_len = c.context_length;
    const std::vector<float>& divisors = c.longrope_original_context == 0 ? w.rope_freqs
                                         : c.long_rope_factors(max_model_len) ? w.rope_factors_long
                                                                              : w.rope_factors_short;
    RotaryAngles angles;
    angles.inv_freq = inv_frequencies(c, c.rope_theta, c.rope_freq_scale, yarn, divisors);
    angles.magnitude = c.rope_magnitude;
    // Multimodal RoPE: Qwen2.5-VL's sections are runs of pairs (t, then h,
    // then w); Qwen3-VL interleaves them (pair p follows h when p % 3 == 1
    // and p < 3 * h-section, w when p % 3 == 2 and p < 3 * w-section, else t:
    // transformers' apply_interleaved_mrope).
    if (c.traits.multimodal_rope != MultimodalRope::NONE) {
        const int pairs = static_cast<int>(angles.inv_freq.size());
        angles.pair_axis.assign(pairs, 0);
        for (int p = 0; p < pairs; ++p) {
            if (c.traits.multimodal_rope == MultimodalRope::SECTIONS) {
                angles.pair_axis[p] = p < c.rope_sections[0] ? 0 : p < c.rope_sections[0] + c.rope_sections[1] ? 1 : 2;
            } else {
                const int axis = p % 3;
                angles.pair_axis[p] = axis != 0 && p < 3 * c.rope_sections[axis] ? static_cast<uint8_t>(axis) : 0;
            }
        }
    }
    return angles;
}

RotaryAngles RotaryAngles::sliding(const ModelConfig& c) {
    // Over the sliding layers' own rotated dims (Gemma 4's heads there are
    // narrower), without the global layers' divisors (llama.cpp rotates
    // them without freq_factors).
    ModelConfig sliding = c;
    if (c.rope_dim_sliding > 0) sliding.rope_dim = c.rope_dim_sliding;
    RotaryAngles angles;
    angles.inv_freq = inv_frequencies(sliding, c.traits.rope_theta_sliding, 1.0, false, {});
    return angles;
}

void RotaryAngles::fill(const std::vector<int32_t>& positions) {
    const int64_t T = static_cast<int64_t>(positions.size());
    const int64_t pairs = static_cast<int64_t>(inv_freq.size());
    cos.resize(T * pairs);
    sin.resize(T * pairs);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t p = 0; p < pairs; ++p) {
            const float angle = positions[t] * inv_freq[p];
            cos[t * pairs + p] = std::cos(angle) * magnitude;
            sin[t * pairs + p] = std::sin(angle) * magnitude;
        }
}

void RotaryAngles::fill_multimodal(const std::vector<int32_t>& positions) {
    const int64_t T = static_cast<int64_t>(positions.size() / 3);
    const int64_t pairs = static_cast<int64_t>(inv_freq.size());
    cos.resize(T * pairs);
    sin.resize(T * pairs);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t p = 0; p < pairs; ++p) {
            const float angle = positions[3 * t + pair_axis[p]] * inv_freq[p];
            cos[t * pairs + p] = std::cos(angle) * magnitude;
            sin[t * pairs + p] = std::sin(angle) * magnitude;
        }
}

}  // namespace vllm
