// The building blocks of vision transformers (SigLIP, and the ViTs of other
// families): GELU (tanh form), bidirectional multi-head
// attention over one image's patches (no mask, no cache), a pre-norm
// encoder layer with biased projections, and patch embedding as a matmul.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "util/thread_pool.h"

namespace vllm {

// x = gelu_tanh(x) (transformers' gelu_pytorch_tanh), n floats in place.
void vit_gelu_tanh(float* x, int64_t n, ThreadPool& pool);

// softmax(q k^T * scale) v per head over all n tokens: q, k, v, out are
// [n][heads * head_dim]. Bidirectional (an image's patches see each other).
void vit_attention(const float* q, const float* k, const float* v, float* out, int64_t n, int heads, int head_dim,
                   ThreadPool& pool);

// One pre-norm encoder layer (SigLIP's): x += o(attn(ln1(x))); x += down(gelu(up(ln2(x)))).
struct VitLayer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
    kernels::QuantMatrix q, k, v, o, up, down;
    std::vector<float> q_b, k_b, v_b, o_b, up_b, down_b;
};
void vit_layer(const VitLayer& w, float* x, int64_t n, int dim, int ffn_dim, int heads, float eps, ThreadPool& pool);

}  // namespace vllm
