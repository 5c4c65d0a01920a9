#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace vllm {

void Sampler::apply_penalties(const SamplingConfig& c, float* logits, int32_t vocab_size,
                              const std::vector<int32_t>& prompt, const std::vector<int32_t>& output) {
    if (c.repetition_penalty != 1.0f) {
        // CTRL-style: shrink positive logits, grow negative ones, once per distinct token.
        std::vector<bool> seen(vocab_size, false);
        auto penalize = [&](int32_t id) {
            if (id < 0 || id >= vocab_size || seen[id]) return;
            seen[id] = true;
            logits[id] = logits[id] > 0 ? logits[id] / c.repetition_penalty : logits[id] * c.repetition_penalty;
        };
        for (int32_t id : prompt) penalize(id);
        for (int32_t id : output) penalize(id);
    }
    if (c.presence_penalty != 0.0f || c.frequency_penalty != 0.0f) {
        std::unordered_map<int32_t, int> counts;
        for (int32_t id : output) ++counts[id];
        for (const auto& [id, n] : counts) {
            if (id < 0 || id >= vocab_size) continue;
            logits[id] -= c.frequency_penalty * n + c.presence_penalty;
        }
    }
}

int32_t Sampler::sample(const SamplingConfig& c, float* logits, int32_t vocab_size,
                        const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                        std::mt19937_64& rng) {
    apply_penalties(c, logits, vocab_size, prompt, output);
    if (c.greedy()) return static_cast<int32_t>(std::max_element(logits, logits + vocab_size) - logits);

    // Softmax at the temperature over the whole vocabulary.
    const float max_logit = *std::max_element(logits, logits + vocab_size);
    std::vector<float> probs(vocab_size);
    for (int32_t i = 0; i < vocab_size; ++i) probs[i] = std::exp((logits[i] - max_logit) / c.temperature);

    // Candidates sorted by probability, cut by min-p, top-k, then top-p.
    std::vector<int32_t> ids(vocab_size);
    std::iota(ids.begin(), ids.end(), 0);
    size_t keep = ids.size();
    if (c.min_p > 0.0f) {
        // The most likely token's unnormalised probability is exp(0) = 1.
        keep = std::partition(ids.begin(), ids.end(), [&](int32_t id) { return probs[id] >= c.min_p; }) - ids.begin();
    }
    if (c.top_k > 0 && static_cast<size_t>(c.top_k) < keep) {
        std::nth_element(ids.begin(), ids.begin() + c.top_k, ids.begin() + keep,
                         [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
        keep = c.top_k;
    }
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += probs[ids[i]];
    if (c.top_p < 1.0f) {
        // Only the nucleus needs the candidates in order.
        std::sort(ids.begin(), ids.begin() + keep, [&](int32_t a, int32_t b) {
            return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
        });
        // Smallest prefix whose mass reaches top_p (at least one token).
        double mass = 0.0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            mass += probs[ids[i]];
            if (mass >= c.top_p * total) {
                cut = i + 1;
                break;
            }
        }
        keep = cut;
        total = mass;
    }
    std::uniform_real_distribution<double> uniform(0.0, total);
    double r = uniform(rng), acc = 0.0;
    for (size_t i = 0; i < keep; ++i) {
        acc += probs[ids[i]];
        if (r < acc) return ids[i];
    }
    return ids[keep - 1];
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
    if (top > 0) {
        std::vector<int32_t> ids(vocab_size);
        for (int32_t i = 0; i < vocab_size; ++i) ids[i] = i;
        const int32_t k = std::min(top, vocab_size);
        std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
            return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
        });
        for (int32_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], logits[ids[i]] - log_z);
    }
    return out;
}

}  // namespace vllm
