#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vllm {

namespace {

template <typename T>
void grow_zeroed(std::vector<T>& v, int32_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(size, T{});
}

bool in_vocab(int32_t id, int32_t vocab_size) { return id >= 0 && id < vocab_size; }

}  // namespace

void Sampler::reset_ids(int32_t vocab_size) {
    ids_.resize(vocab_size);
    std::iota(ids_.begin(), ids_.end(), 0);
}

void Sampler::apply_penalties(const SamplingConfig& c, float* logits, int32_t vocab_size,
                              const std::vector<int32_t>& prompt, const std::vector<int32_t>& output) {
    if (c.repetition_penalty != 1.0f) {
        // CTRL-style: shrink positive logits, grow negative ones, once per distinct token.
        grow_zeroed(seen_, vocab_size);
        auto penalize = [&](int32_t id) {
            if (!in_vocab(id, vocab_size) || seen_[id]) return;
            seen_[id] = 1;
            logits[id] = logits[id] > 0 ? logits[id] / c.repetition_penalty : logits[id] * c.repetition_penalty;
        };
        for (int32_t id : prompt) penalize(id);
        for (int32_t id : output) penalize(id);
        for (int32_t id : prompt) if (in_vocab(id, vocab_size)) seen_[id] = 0;
        for (int32_t id : output) if (in_vocab(id, vocab_size)) seen_[id] = 0;
    }
    if (c.presence_penalty != 0.0f || c.frequency_penalty != 0.0f) {
        grow_zeroed(counts_, vocab_size);
        for (int32_t id : output)
            if (in_vocab(id, vocab_size)) ++counts_[id];
        // Each distinct token once: the first visit applies its count and
        // zeroes it, so later visits of the same id see 0 and skip.
        for (int32_t id : output) {
            if (!in_vocab(id, vocab_size) || counts_[id] == 0) continue;
            logits[id] -= c.frequency_penalty * counts_[id] + c.presence_penalty;
            counts_[id] = 0;
        }
    }
}

size_t Sampler::candidates(const SamplingConfig& c, const float* logits, int32_t vocab_size, double& total) {
    // Softmax at the temperature over the whole vocabulary.
    const float max_logit = *std::max_element(logits, logits + vocab_size);
    probs_.resize(vocab_size);
    for (int32_t i = 0; i < vocab_size; ++i) probs_[i] = std::exp((logits[i] - max_logit) / c.temperature);
    const float* probs = probs_.data();

    // Candidates sorted by probability, cut by min-p, top-k, then top-p.
    reset_ids(vocab_size);
    size_t keep = ids_.size();
    if (c.min_p > 0.0f) {
        // The most likely token's unnormalised probability is exp(0) = 1.
        keep = std::partition(ids_.begin(), ids_.end(), [&](int32_t id) { return probs[id] >= c.min_p; }) -
               ids_.begin();
    }
    if (c.top_k > 0 && static_cast<size_t>(c.top_k) < keep) {
        std::nth_element(ids_.begin(), ids_.begin() + c.top_k, ids_.begin() + keep,
                         [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
        keep = c.top_k;
    }
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += probs[ids_[i]];
    if (c.top_p < 1.0f) {
        // Only the nucleus needs the candidates in order.
        std::sort(ids_.begin(), ids_.begin() + keep, [&](int32_t a, int32_t b) {
            return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
        });
        // Smallest prefix whose mass reaches top_p (at least one token).
        double mass = 0.0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            mass += probs[ids_[i]];
            if (mass >= c.top_p * total) {
                cut = i + 1;
                break;
            }
        }
        keep = cut;
        total = mass;
    }
    return keep;
}

int32_t Sampler::sample(const SamplingConfig& c, float* logits, int32_t vocab_size,
                        const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                        std::mt19937_64& rng) {
    apply_penalties(c, logits, vocab_size, prompt, output);
    if (c.greedy()) return static_cast<int32_t>(std::max_element(logits, logits + vocab_size) - logits);
    double total = 0.0;
    const size_t keep = candidates(c, logits, vocab_size, total);
    std::uniform_real_distribution<double> uniform(0.0, total);
    double r = uniform(rng), acc = 0.0;
    for (size_t i = 0; i < keep; ++i) {
        acc += probs_[ids_[i]];
        if (r < acc) return ids_[i];
    }
    return ids_[keep - 1];
}

std::vector<float>& Sampler::distribution(const SamplingConfig& c, float* logits, int32_t vocab_size,
                                          const std::vector<int32_t>& prompt, const std::vector<int32_t>& output) {
    apply_penalties(c, logits, vocab_size, prompt, output);
    dense_.assign(vocab_size, 0.0f);
    if (c.greedy()) {
        dense_[std::max_element(logits, logits + vocab_size) - logits] = 1.0f;
        return dense_;
    }
    double total = 0.0;
    const size_t keep = candidates(c, logits, vocab_size, total);
    for (size_t i = 0; i < keep; ++i) dense_[ids_[i]] = static_cast<float>(probs_[ids_[i]] / total);
    return dense_;
}

int32_t draw_index(const float* weights, int32_t n, std::mt19937_64& rng) {
    double total = 0.0;
    for (int32_t i = 0; i < n; ++i) total += weights[i];
    std::uniform_real_distribution<double> uniform(0.0, total);
    double r = uniform(rng), acc = 0.0;
    int32_t last = 0;
    for (int32_t i = 0; i < n; ++i) {
        if (weights[i] <= 0.0f) continue;
        acc += weights[i];
        last = i;
        if (r < acc) return i;
    }
    return last;  // rounding left r at the very end
}

TokenLogprob Sampler::logprobs(const float* logits, int32_t vocab_size, int32_t token, int32_t top) {
    float max = -INFINITY;
    for (int32_t i = 0; i < vocab_size; ++i) max = std::max(max, logits[i]);
    double sum = 0.0;
    for (int32_t i = 0; i < vocab_size; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
    const float log_z = max + static_cast<float>(std::log(sum));
    TokenLogprob out;
    out.token = token;
    out.logprob = logits[token] - log_z;
    const float own = logits[token];
    out.rank = static_cast<int32_t>(std::count_if(logits, logits + vocab_size, [own](float v) { return v >= own; }));
    if (top > 0) {
        reset_ids(vocab_size);
        const int32_t k = std::min(top, vocab_size);
        std::partial_sort(ids_.begin(), ids_.begin() + k, ids_.end(), [&](int32_t a, int32_t b) {
            return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
        });
        for (int32_t i = 0; i < k; ++i) out.top.emplace_back(ids_[i], logits[ids_[i]] - log_z);
    }
    return out;
}

}  // namespace vllm
