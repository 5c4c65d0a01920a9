// Combining split-key attention partials: each partial holds, per query
// vector, sum_j e^(s_j - m) v_j, its maximum m and sum_j e^(s_j - m); the
// merge rescales them to the common maximum. Cheap (once per query and
// split), so it is not built per ISA.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace vllm::kernels {

int64_t attention_partial_floats(const PagedAttention& a, const AttentionTile& tile) {
    const int64_t nq = (tile.t_end - tile.t_begin) * (a.n_heads / a.n_kv_heads);
    return nq * (a.head_dim + 2);
}

void merge_attention_partials(const PagedAttention& a, const AttentionTile& tile, const float* const* partials,
                              int n) {
    const int hd = a.head_dim, group = a.n_heads / a.n_kv_heads;
    const int64_t nq = (tile.t_end - tile.t_begin) * group;
    for (int64_t qi = 0; qi < nq; ++qi) {
        float m = -INFINITY;
        for (int s = 0; s < n; ++s) m = std::fmax(m, partials[s][nq * hd + qi]);
        const int64_t t = tile.t_begin + qi / group;
        float* dst = a.out + (t * a.n_heads + tile.kv_head * group + qi % group) * hd;
        float total = 0.0f;
        for (int d = 0; d < hd; ++d) dst[d] = 0.0f;
        for (int s = 0; s < n; ++s) {
            const float ms = partials[s][nq * hd + qi];
            if (ms == -INFINITY) continue;  // this split held no key the query sees
            const float w = std::exp(ms - m);
            total += w * partials[s][nq * (hd + 1) + qi];
            const float* o = partials[s] + qi * hd;
            for (int d = 0; d < hd; ++d) dst[d] += w * o[d];
        }
        const float inv = attention_normaliser(a, tile.kv_head * group + int(qi % group), m, total);
        for (int d = 0; d < hd; ++d) dst[d] *= inv;
    }
}

}  // namespace vllm::kernels
