#include "model/llama.h"

#include "kernels/cpu/interleave.h"
#include "kernels/cpu/ops.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace vllm {

namespace {

// Element-wise work below about this many floats runs on the calling thread
// alone (ThreadPool::parallel_for's min_chunk): a decode step's norms,
// residual adds and activations are a few thousand floats, and a parallel
// region costs more than that work.
constexpr int64_t kMinParallelFloats = 8192;

int64_t rows_per_chunk(int64_t row_floats) { return std::max<int64_t>(1, kMinParallelFloats / row_floats); }

// RMS-normalises each of n_rows rows of `dim` floats, in parallel.
void rms_norm_rows(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim, float eps,
                   ThreadPool& pool) {
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) kernels::rms_norm(x + r * dim, weight, out + r * dim, dim, eps);
        },
        rows_per_chunk(dim));
}

// The residual add and the next RMS norm in one pass over the rows:
// x += y, then out = rms_norm(x) * weight (out may alias y).
void add_rms_norm_rows(float* x, const float* y, const float* weight, float* out, int64_t n_rows, int64_t dim,
                       float eps, ThreadPool& pool) {
    pool.parallel_for(
        n_rows,
        [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                float* row = x + r * dim;
                const float* add = y + r * dim;
                for (int64_t i = 0; i < dim; ++i) row[i] += add[i];
                kernels::rms_norm(row, weight, out + r * dim, dim, eps);
            }
        },
        rows_per_chunk(dim));
}

void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool) {
    pool.parallel_for(
        n,
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) x[i] += y[i];
        },
        kMinParallelFloats);
}

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
        low = std::max(0.0, std::floor(pair_of(c.yarn_beta_fast)));
        high = std::min(double(c.rope_dim - 1), std::ceil(pair_of(c.yarn_beta_slow)));
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

// The FFN's gate activation times up, over [begin, end) of the gate rows.
void gated_activation(FfnActivation act, float* gate, const float* up, int64_t n) {
    if (act == FfnActivation::GELU_TANH)
        kernels::gelu_tanh_mul(gate, up, n);
    else
        kernels::silu_mul(gate, up, n);
}

}  // namespace

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, int max_model_len)
    : config_(std::move(config)), weights_(std::move(weights)) {
    const bool yarn = config_.yarn_original_context > 0;
    if (max_model_len <= 0) max_model_len = config_.context_length;
    const std::vector<float>& divisors = config_.longrope_original_context == 0 ? weights_.rope_freqs
                                         : config_.long_rope_factors(max_model_len) ? weights_.rope_factors_long
                                                                                      : weights_.rope_factors_short;
    rope_.inv_freq = inv_frequencies(config_, config_.rope_theta, config_.rope_freq_scale, yarn, divisors);
    rope_.magnitude = config_.rope_magnitude;
    if (config_.rope_theta_sliding > 0.0f)
        rope_sliding_.inv_freq = inv_frequencies(config_, config_.rope_theta_sliding, 1.0, false, weights_.rope_freqs);
}

void LlamaModel::fill_angles(RopeAngles& angles) {
    const int64_t T = static_cast<int64_t>(positions_.size());
    const int64_t pairs = static_cast<int64_t>(angles.inv_freq.size());
    angles.cos.resize(T * pairs);
    angles.sin.resize(T * pairs);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t p = 0; p < pairs; ++p) {
            const float angle = positions_[t] * angles.inv_freq[p];
            angles.cos[t * pairs + p] = std::cos(angle) * angles.magnitude;
            angles.sin[t * pairs + p] = std::sin(angle) * angles.magnitude;
        }
}

void LlamaModel::finish_heads(const LayerWeights& w, const RopeAngles& angles, ThreadPool& pool) {
    const ModelConfig& c = config_;
    const int hd = c.head_dim, pairs = c.rope_dim / 2;
    const int heads = c.n_heads + 2 * c.n_kv_heads;  // per token: q heads, k heads, v heads
    const bool halves = c.rope_style == RopeStyle::HALVES;
    const int64_t n_tokens = static_cast<int64_t>(positions_.size());
    pool.parallel_for(
        n_tokens * heads,
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const int64_t t = i / heads;
                int h = static_cast<int>(i % heads);
                const bool is_q = h < c.n_heads, is_k = !is_q && h < c.n_heads + c.n_kv_heads;
                h -= is_q ? 0 : is_k ? c.n_heads : c.n_heads + c.n_kv_heads;
                const int row_heads = is_q ? c.n_heads : c.n_kv_heads;
                float* v = (is_q ? q_.data() : is_k ? k_.data() : v_.data()) + (t * row_heads + h) * hd;
                if (c.qkv_bias) {
                    const float* bias = (is_q ? w.bq : is_k ? w.bk : w.bv).data() + h * hd;
                    for (int j = 0; j < hd; ++j) v[j] += bias[j];
                }
                if (!is_q && !is_k) continue;
                if (c.qk_norm) kernels::rms_norm(v, (is_q ? w.q_norm : w.k_norm).data(), v, hd, c.rms_eps);
                const float* cs = &angles.cos[t * pairs];
                const float* sn = &angles.sin[t * pairs];
                for (int p = 0; p < pairs; ++p) {
                    // HALVES pairs element p with p + rope_dim/2; ADJACENT with 2p+1.
                    float* a = halves ? v + p : v + 2 * p;
                    float* b = halves ? v + p + pairs : v + 2 * p + 1;
                    const float x0 = *a, x1 = *b;
                    *a = x0 * cs[p] - x1 * sn[p];
                    *b = x0 * sn[p] + x1 * cs[p];
                }
            }
        },
        rows_per_chunk(hd));
}

void LlamaModel::attention(const std::vector<SequenceSlice>& batch, int layer, KVCache& cache, ThreadPool& pool) {
    const int hd = config_.head_dim, group = config_.n_heads / config_.n_kv_heads;
    const int kv_dim = config_.n_kv_heads * hd, bs = cache.block_size();

    // Store this step's K/V first: a token attends to every earlier token of
    // its sequence, including those in this very batch.
    std::vector<kernels::AttentionTile> tiles;
    const int64_t tokens_per_tile = std::max(1, kernels::kAttentionMaxQueries / group);
    int64_t t0 = 0;
    const int kv_group = cache.group_of(layer);
    for (const SequenceSlice& sl : batch) {
        const int32_t* block_table = sl.block_tables[kv_group];
        for (int i = 0; i < sl.n_tokens; ++i) {
            const int pos = sl.start_pos + i;
            const int32_t block = block_table[pos / bs];
            cache.store_key(layer, block, pos % bs, &k_[(t0 + i) * kv_dim]);
            cache.store_value(layer, block, pos % bs, &v_[(t0 + i) * kv_dim]);
        }
        for (int64_t t = t0; t < t0 + sl.n_tokens; t += tokens_per_tile)
            for (int h = 0; h < config_.n_kv_heads; ++h) {
                kernels::AttentionTile tile;
                tile.block_table = block_table;
                tile.t_begin = t;
                tile.t_end = std::min<int64_t>(t + tokens_per_tile, t0 + sl.n_tokens);
                tile.kv_head = h;
                tiles.push_back(tile);
            }
        t0 += sl.n_tokens;
    }

    kernels::PagedAttention a;
    a.q = q_.data();
    a.out = attn_.data();
    a.positions = positions_.data();
    a.k_cache = cache.layer_keys(layer);
    a.v_cache = cache.layer_values(layer);
    a.kv_dtype = cache.dtype();
    a.block_size = bs;
    a.n_heads = config_.n_heads;
    a.n_kv_heads = config_.n_kv_heads;
    a.head_dim = hd;
    a.scale = config_.attn_scale;
    a.softcap = config_.attn_softcap;
    const bool sliding = config_.is_sliding(layer);
    if (sliding) a.window = config_.sliding_window;

    // Long key ranges are split into fixed runs of kKeysPerSplit keys that
    // threads work on in parallel, and the partial softmaxes are merged
    // afterwards (flash-decoding). The split points are absolute key
    // positions, whatever the batch holds, so a query gets bit-identical
    // attention whether it runs alone, batched, in a decode step or in a
    // prefill chunk (batch invariance). A run past a query's own position,
    // or before every query's sliding window, holds nothing it sees and
    // merges as an exact no-op; the runs before the window are not made.
    struct Split {
        size_t tile, first_work;
        int n;
    };
    std::vector<kernels::AttentionTile> work;
    std::vector<int64_t> partial_offset;  // per work item, into `partials`; -1: writes its rows directly
    std::vector<Split> split_tiles;
    int64_t partial_floats = 0;
    for (size_t i = 0; i < tiles.size(); ++i) {
        const int span = positions_[tiles[i].t_end - 1] + 1;
        const int first_key = sliding ? std::max(0, positions_[tiles[i].t_begin] - a.window + 1) : 0;
        const int first_split = first_key / kKeysPerSplit;
        const int n = (span + kKeysPerSplit - 1) / kKeysPerSplit - first_split;
        if (n == 1) {
            work.push_back(tiles[i]);
            partial_offset.push_back(-1);
            continue;
        }
        split_tiles.push_back({i, work.size(), n});
        for (int k = first_split; k < first_split + n; ++k) {
            kernels::AttentionTile part = tiles[i];
            part.key_begin = k * kKeysPerSplit;
            part.key_end = std::min(span, (k + 1) * kKeysPerSplit);
            work.push_back(part);
            partial_offset.push_back(partial_floats);
            partial_floats += kernels::attention_partial_floats(a, part);
        }
    }
    std::vector<float> partials(partial_floats);
    for (size_t w = 0; w < work.size(); ++w)
        if (partial_offset[w] >= 0) work[w].partial = partials.data() + partial_offset[w];

    // One chunk per tile: threads take the next tile as they finish one,
    // which balances tiles of different context lengths.
    pool.for_each_chunk(static_cast<int64_t>(work.size()), [&](int64_t i) { kernels::attention_tile(a, work[i]); });

    for (const Split& split : split_tiles) {
        std::vector<const float*> parts;
        for (int k = 0; k < split.n; ++k) parts.push_back(work[split.first_work + k].partial);
        kernels::merge_attention_partials(a, tiles[split.tile], parts.data(), split.n);
    }
}

void LlamaModel::check_block_tables(const std::vector<SequenceSlice>& batch, const KVCache& cache) const {
    // Only sliding groups hold null entries. A sliding layer reads from the
    // window of the slice's first query on (the attention kernel reads no
    // key outside a tile's windows); a group with a full-attention layer
    // (e.g. a single group for every layer) is never freed early.
    std::array<int, kMaxKvCacheGroups> window{};
    std::array<bool, kMaxKvCacheGroups> full{};
    for (int l = 0; l < config_.n_layers; ++l) {
        const int g = cache.group_of(l);
        if (config_.is_sliding(l)) window[g] = config_.sliding_window;
        else full[g] = true;
    }
    const int bs = cache.block_size();
    for (const SequenceSlice& sl : batch)
        for (int g = 0; g < kMaxKvCacheGroups; ++g) {
            if (sl.block_tables[g] == nullptr || full[g]) continue;
            const int first = std::max(0, sl.start_pos - window[g] + 1);
            for (int b = first / bs; b <= (sl.start_pos + sl.n_tokens - 1) / bs; ++b)
                if (sl.block_tables[g][b] == kNullBlock)
                    throw_runtime("internal error: attention would read a freed KV block (group " + std::to_string(g) +
                                  ", position " + std::to_string(b * bs) + ")");
        }
}

void LlamaModel::forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                         std::vector<float>& logits) {
    const ModelConfig& c = config_;
    check_block_tables(batch, cache);
    const int dim = c.dim, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;

    positions_.clear();
    std::vector<int32_t> tokens;
    for (const SequenceSlice& s : batch)
        for (int i = 0; i < s.n_tokens; ++i) {
            tokens.push_back(s.tokens[i]);
            positions_.push_back(s.start_pos + i);
        }
    const int64_t T = static_cast<int64_t>(tokens.size());
    x_.resize(T * dim);
    xn_.resize(T * dim);
    q_.resize(T * q_dim);
    k_.resize(T * kv_dim);
    v_.resize(T * kv_dim);
    attn_.resize(T * q_dim);
    gate_.resize(T * c.ffn_dim);
    up_.resize(T * c.ffn_dim);

    fill_angles(rope_);
    const bool sliding_rope = c.rope_theta_sliding > 0.0f;
    if (sliding_rope) fill_angles(rope_sliding_);

    const kernels::QuantMatrix& embd = weights_.token_embedding;
    // Gemma scales the embedding by sqrt(dim), rounded to float as llama.cpp does.
    const float embd_scale = std::sqrt(static_cast<float>(dim));
    for (int64_t t = 0; t < T; ++t) {
        float* row = &x_[t * dim];
        kernels::dequantize_row(embd.type, embd.data + size_t(tokens[t]) * embd.row_bytes, row, dim);
        if (c.scale_embedding)
            for (int i = 0; i < dim; ++i) row[i] *= embd_scale;
    }

    // Each residual add is fused with the RMS norm that follows it (the
    // next layer's attention norm after the FFN), so a decode step's layer
    // is five parallel regions: the q/k/v matmuls, attention, the output
    // projection, gate/up and down; the element-wise work between them is
    // too small to share out (kMinParallelFloats).
    rms_norm_rows(x_.data(), weights_.layers[0].attn_norm.data(), xn_.data(), T, dim, c.rms_eps, pool);
    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& w = weights_.layers[l];
        kernels::matmul_shared({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, xn_.data(), T, pool);
        finish_heads(w, sliding_rope && c.is_sliding(l) ? rope_sliding_ : rope_, pool);
        attention(batch, l, cache, pool);
        // Residual adds go through xn_ as the matmul output.
        kernels::matmul(w.wo, attn_.data(), T, xn_.data(), pool);
        if (c.post_norms) rms_norm_rows(xn_.data(), w.post_attn_norm.data(), xn_.data(), T, dim, c.rms_eps, pool);
        add_rms_norm_rows(x_.data(), xn_.data(), w.ffn_norm.data(), xn_.data(), T, dim, c.rms_eps, pool);

        kernels::matmul_shared({{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}}, xn_.data(), T, pool);
        pool.parallel_for(
            T * c.ffn_dim,
            [&](int64_t begin, int64_t end) {
                gated_activation(c.ffn_activation, &gate_[begin], &up_[begin], end - begin);
            },
            kMinParallelFloats);
        kernels::matmul(w.w_down, gate_.data(), T, xn_.data(), pool);
        if (c.post_norms) rms_norm_rows(xn_.data(), w.post_ffn_norm.data(), xn_.data(), T, dim, c.rms_eps, pool);
        if (l + 1 < c.n_layers)
            add_rms_norm_rows(x_.data(), xn_.data(), weights_.layers[l + 1].attn_norm.data(), xn_.data(), T, dim,
                              c.rms_eps, pool);
        else
            add_in_place(x_.data(), xn_.data(), T * dim, pool);
    }

    // Final norm and output projection only for the rows whose logits are wanted.
    std::vector<float> last;
    int64_t row = 0, n_out = 0;
    for (const SequenceSlice& s : batch) {
        row += s.n_tokens;
        if (s.num_logits < 0 || s.num_logits > s.n_tokens)
            throw_runtime("internal error: a slice wants logits of " + std::to_string(s.num_logits) + " of its " +
                          std::to_string(s.n_tokens) + " tokens");
        for (int64_t t = row - s.num_logits; t < row; ++t, ++n_out) {
            last.resize((n_out + 1) * dim);
            kernels::rms_norm(&x_[t * dim], weights_.output_norm.data(), &last[n_out * dim], dim, c.rms_eps);
        }
    }
    logits.resize(n_out * logit_count());
    if (n_out > 0) kernels::matmul(weights_.output, last.data(), n_out, logits.data(), pool);
    if (c.final_softcap > 0.0f) kernels::soft_cap(logits.data(), static_cast<int64_t>(logits.size()), c.final_softcap);
}

void LlamaModel::limit_logits(int64_t tokens) {
    if (tokens <= 0) throw_invalid_argument("limit_logits: the number of tokens must be positive");
    const int64_t group = kernels::kInterleaveRows;
    weights_.output.rows = std::min<int64_t>(config_.vocab_size, (tokens + group - 1) / group * group);
}

}  // namespace vllm
