// Multi-head latent attention's kernel (model/blocks/latent_attention.h) on
// plain pointers: the absorbed form the engine runs, a head's q_nope taken
// into latent space through W_UK and the weighted latent through W_UV,
// equals attention over the expanded K = [W_UK c ; k_rope] and V = W_UV c of
// every cached latent row c, computed directly in double.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "model/blocks/latent_attention.h"

using namespace vllm;
using vllm_test::check;
using vllm_test::report;

namespace {

// One head through latent_attention_heads, as head 1 of 3 (the others'
// inputs are noise it must not read).
void test_absorbed_equals_expanded(int n_keys) {
    const int nope = 16, rope = 8, lora = 32, v_dim = 24, width = lora + rope;
    const float scale = 0.2f;
    std::mt19937 rng(n_keys);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto randoms = [&](size_t n) {
        std::vector<float> v(n);
        for (float& x : v) x = normal(rng);
        return v;
    };
    const std::vector<float> keys = randoms(size_t(n_keys) * width);  // [latent | k_rope] rows
    const std::vector<float> w_uk = randoms(size_t(nope) * lora), w_uv = randoms(size_t(v_dim) * lora);
    const std::vector<float> q_nope = randoms(nope), q_rope = randoms(rope);

    // Expanded: k_j = [W_UK c_j ; k_rope_j], v_j = W_UV c_j.
    std::vector<double> scores(n_keys), expanded(v_dim, 0.0);
    double max = -1e300, sum = 0.0;
    for (int j = 0; j < n_keys; ++j) {
        const float* c = &keys[size_t(j) * width];
        double s = 0.0;
        for (int i = 0; i < nope; ++i) {
            double k = 0.0;
            for (int r = 0; r < lora; ++r) k += double(w_uk[size_t(i) * lora + r]) * c[r];
            s += q_nope[i] * k;
        }
        for (int i = 0; i < rope; ++i) s += double(q_rope[i]) * c[lora + i];
        scores[j] = scale * s;
        max = std::max(max, scores[j]);
    }
    for (double& s : scores) sum += s = std::exp(s - max);
    for (int j = 0; j < n_keys; ++j)
        for (int d = 0; d < v_dim; ++d) {
            double v = 0.0;
            for (int r = 0; r < lora; ++r) v += double(w_uv[size_t(d) * lora + r]) * keys[size_t(j) * width + r];
            expanded[d] += scores[j] / sum * v;
        }

    // Absorbed: q_latent = W_UK^T q_nope, the kernel, then W_UV.
    std::vector<float> q_latents = randoms(size_t(3) * lora), q_ropes = randoms(size_t(3) * rope);
    float* q_latent = &q_latents[lora];
    std::fill_n(q_latent, lora, 0.0f);
    for (int r = 0; r < lora; ++r)
        for (int i = 0; i < nope; ++i) q_latent[r] += w_uk[size_t(i) * lora + r] * q_nope[i];
    std::copy(q_rope.begin(), q_rope.end(), q_ropes.begin() + rope);
    std::vector<float> out_latents(size_t(3) * lora), scratch(size_t(3) * n_keys);
    latent_attention_heads(q_latents.data(), lora, q_ropes.data(), rope, 3, keys.data(), n_keys, lora, rope, scale,
                           scratch.data(), out_latents.data(), lora);
    const float* out_latent = &out_latents[lora];
    double worst = 0.0;
    for (int d = 0; d < v_dim; ++d) {
        double v = 0.0;
        for (int r = 0; r < lora; ++r) v += double(w_uv[size_t(d) * lora + r]) * out_latent[r];
        worst = std::max(worst, std::fabs(v - expanded[d]) / std::max(1.0, std::fabs(expanded[d])));
    }
    check(worst < 1e-4, "absorbed latent attention equals the expanded form over " + std::to_string(n_keys) +
                            " keys (relative error " + std::to_string(worst) + ")");
}

}  // namespace

int main() {
    for (int n : {1, 7, 100, 1000}) test_absorbed_equals_expanded(n);
    return report();
}
