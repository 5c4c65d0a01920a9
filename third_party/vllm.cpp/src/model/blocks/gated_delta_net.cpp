#include "model/blocks/gated_delta_net.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ops.h"
#include "model/blocks/activations.h"
#include "model/blocks/delta_rule.h"
#include "util/error.h"

namespace vllm {

namespace {

// Tokens per chunk of the chunked delta rule (transformers' and FLA's).
constexpr int kDeltaRuleChunk = 64;

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// transformers' l2norm: x / sqrt(sum x^2 + 1e-6), then times `scale`.
void l2_normalise(float* x, int n, float scale) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += x[i] * x[i];
    const float f = scale / std::sqrt(sum + 1e-6f);
    for (int i = 0; i < n; ++i) x[i] *= f;
}

// The causal depthwise conv of one sequence's n tokens (in: [n][channels])
// into out, continuing from and updating `conv_state` [kernel - 1][channels].
void causal_conv(const float* in, int64_t n, int channels, int kernel, const float* weights, float* conv_state,
                 float* out) {
    const int past = kernel - 1;
    auto input = [&](int64_t t) {  // token t's inputs; t < 0 reads the state
        return t < 0 ? conv_state + (t + past) * channels : in + t * channels;
    };
    for (int64_t t = 0; t < n; ++t) {
        float* o = out + t * channels;
        for (int ch = 0; ch < channels; ++ch) o[ch] = 0.0f;
        for (int j = 0; j < kernel; ++j) {
            const float* x = input(t - past + j);
            for (int ch = 0; ch < channels; ++ch) o[ch] += weights[ch * kernel + j] * x[ch];
        }
        for (int ch = 0; ch < channels; ++ch) o[ch] = silu(o[ch]);
    }
    // The state keeps the last `past` inputs, oldest first.
    std::vector<float> last(static_cast<size_t>(past) * channels);
    for (int j = 0; j < past; ++j) std::memcpy(&last[size_t(j) * channels], input(n - past + j), sizeof(float) * channels);
    std::memcpy(conv_state, last.data(), sizeof(float) * last.size());
}

}  // namespace

RecurrentStates::RecurrentStates(const ModelConfig& c) : layer_floats_(c.recurrent_state_floats()) {
    linear_index_.assign(c.n_layers, -1);
    for (int l = 0; l < c.n_layers; ++l)
        if (c.is_recurrent(l)) linear_index_[l] = n_linear_++;
}

float* RecurrentStates::layer_state(int32_t slot, int layer) {
    if (slot < 0 || linear_index_[layer] < 0)
        throw_runtime("internal error: a linear-attention layer ran without its recurrent state slot");
    if (static_cast<size_t>(slot) >= slots_.size()) slots_.resize(static_cast<size_t>(slot) + 1);
    std::unique_ptr<float[]>& s = slots_[static_cast<size_t>(slot)];
    if (!s) s.reset(new float[static_cast<size_t>(layer_floats_ * n_linear_)]());
    return s.get() + layer_floats_ * linear_index_[layer];
}

void gated_delta_net(const ModelConfig& c, const LayerWeights& w, int layer, const std::vector<SequenceSlice>& batch,
                     int group, float* xn, RecurrentStates& states, GatedDeltaNetScratch& s, ThreadPool& pool) {
    int64_t T = 0;
    for (const SequenceSlice& sl : batch) T += sl.n_tokens;
    const int channels = c.linear_conv_channels(), nk = c.linear_k_heads, nv = c.linear_v_heads, hd = c.linear_head_dim;
    const int64_t value_dim = int64_t(nv) * hd, key_dim = int64_t(nk) * hd;
    s.mixed.resize(T * channels);
    s.conv.resize(T * channels);
    s.z.resize(T * value_dim);
    s.b.resize(T * nv);
    s.a.resize(T * nv);
    s.core.resize(T * value_dim);
    s.decay_log.resize(T * nv);
    s.beta.resize(T * nv);
    kernels::matmul_shared({{&w.w_linear_qkv, s.mixed.data()}, {&w.w_linear_z, s.z.data()}, {&w.w_beta, s.b.data()},
                            {&w.w_alpha, s.a.data()}},
                           xn, T, pool);
    // Per sequence: the conv over its tokens from its state, then q and k
    // normalised per head; g and beta per token and value head.
    const float q_scale = 1.0f / std::sqrt(static_cast<float>(hd));
    // Each sequence's state, looked up here (a slot's first use allocates
    // it) so the parallel region below only reads the store.
    std::vector<int64_t> first(batch.size());
    std::vector<float*> state_of(batch.size());
    int64_t t0 = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
        const SequenceSlice& sl = batch[i];
        first[i] = t0;
        float* state = state_of[i] = states.layer_state(sl.block_tables[group][0], layer);
        if (sl.start_pos == 0) std::memset(state, 0, sizeof(float) * c.recurrent_state_floats());
        causal_conv(s.mixed.data() + t0 * channels, sl.n_tokens, channels, c.conv_kernel, w.conv1d.data(), state,
                    s.conv.data() + t0 * channels);
        t0 += sl.n_tokens;
    }
    for (int64_t t = 0; t < T; ++t) {
        float* row = s.conv.data() + t * channels;
        for (int h = 0; h < nk; ++h) {
            l2_normalise(row + h * hd, hd, q_scale);
            l2_normalise(row + key_dim + h * hd, hd, 1.0f);
        }
        for (int h = 0; h < nv; ++h) {
            s.beta[t * nv + h] = sigmoid(s.b[t * nv + h]);
            s.decay_log[t * nv + h] = w.ssm_a[h] * softplus(s.a[t * nv + h] + w.ssm_dt[h]);
        }
    }
    // The delta rule, one (sequence, value head) per item.
    const int ratio = nv / nk;
    pool.parallel_for(static_cast<int64_t>(batch.size()) * nv, [&](int64_t begin, int64_t end) {
        std::vector<float> chunk_scratch;
        for (int64_t item = begin; item < end; ++item) {
            const size_t i = static_cast<size_t>(item / nv);
            const int h = static_cast<int>(item % nv);
            const SequenceSlice& sl = batch[i];
            const int kh = c.linear_v_heads_grouped ? h / ratio : h % nk;
            const float* rows = s.conv.data() + first[i] * channels;
            DeltaRuleRun run;
            run.n_tokens = sl.n_tokens;
            run.dk = hd, run.dv = hd;
            run.q = rows + kh * hd;
            run.k = rows + key_dim + kh * hd;
            run.v = rows + 2 * key_dim + h * hd;
            run.qk_stride = run.v_stride = channels;
            run.g = s.decay_log.data() + first[i] * nv + h;
            run.beta = s.beta.data() + first[i] * nv + h;
            run.gb_stride = nv;
            run.out = s.core.data() + first[i] * value_dim + h * hd;
            run.out_stride = value_dim;
            float* state = state_of[i] + int64_t(c.conv_kernel - 1) * channels + int64_t(h) * hd * hd;
            if (sl.n_tokens == 1)
                delta_rule_recurrent(run, state);
            else
                delta_rule_chunked(run, state, kDeltaRuleChunk, chunk_scratch);
        }
    });
    // The gated norm per (token, value head): rms_norm(o) * weight * silu(z).
    for (int64_t t = 0; t < T; ++t)
        for (int h = 0; h < nv; ++h) {
            float* o = s.core.data() + t * value_dim + h * hd;
            const float* z = s.z.data() + t * value_dim + h * hd;
            kernels::rms_norm(o, w.ssm_norm.data(), o, hd, c.rms_eps);
            for (int j = 0; j < hd; ++j) o[j] *= silu(z[j]);
        }
    kernels::matmul(w.w_linear_out, s.core.data(), T, xn, pool);
}

}  // namespace vllm
