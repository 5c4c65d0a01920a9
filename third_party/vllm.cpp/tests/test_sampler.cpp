// Sampler without a model: penalty arithmetic (repetition over prompt and
// output once per distinct token, presence/frequency over the output only),
// greedy after penalties, the min-p / top-k / top-p cuts, draws that follow
// the softmax at the temperature, seeded repeatability, log-probabilities,
// and scratch reused across requests and vocabulary sizes without leaking
// one request's penalties into the next; logit_bias and allowed_token_ids
// read, checked against the vocabulary and applied.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "sample/logit_adjustments.h"
#include "sample/sampler.h"
#include "util/error.h"
#include "util/json.h"

using namespace vllm;

namespace {

bool near(float a, float b, float tolerance = 1e-6f) { return std::fabs(a - b) <= tolerance; }

SamplingConfig greedy() {
    SamplingConfig c;
    c.temperature = 0.0f;
    return c;
}

void test_repetition_penalty() {
    Sampler sampler;
    SamplingConfig c = greedy();
    c.repetition_penalty = 2.0f;
    std::vector<float> logits = {4.0f, -4.0f, 1.0f, 3.0f, -1.0f};
    // Token 0 in the prompt and twice in the output, token 1 in the output,
    // ids outside the vocabulary ignored.
    sampler.apply_penalties(c, logits.data(), 5, {0, 7, -1}, {0, 1, 0});
    check(near(logits[0], 2.0f) && near(logits[1], -8.0f) && near(logits[2], 1.0f) && near(logits[3], 3.0f),
          "repetition: positive logits divided, negative multiplied, once per distinct token");
    std::vector<float> fresh = {4.0f, -4.0f, 1.0f, 3.0f, -1.0f};
    sampler.apply_penalties(c, fresh.data(), 5, {}, {3});
    check(near(fresh[0], 4.0f) && near(fresh[3], 1.5f), "repetition: the previous request's tokens are forgotten");
}

void test_presence_and_frequency() {
    Sampler sampler;
    SamplingConfig c = greedy();
    c.presence_penalty = 0.5f;
    c.frequency_penalty = 0.25f;
    std::vector<float> logits(6, 1.0f);
    sampler.apply_penalties(c, logits.data(), 6, {5, 5, 5}, {2, 2, 2, 3, 9});
    check(near(logits[2], 1.0f - 0.75f - 0.5f) && near(logits[3], 1.0f - 0.25f - 0.5f),
          "presence/frequency: count * frequency + presence off each output token");
    check(near(logits[5], 1.0f) && near(logits[0], 1.0f), "presence/frequency: prompt tokens untouched");
    std::vector<float> again(6, 1.0f);
    sampler.apply_penalties(c, again.data(), 6, {}, {3});
    check(near(again[2], 1.0f) && near(again[3], 0.25f), "presence/frequency: counts start from zero each call");
}

void test_greedy_after_penalties() {
    Sampler sampler;
    SamplingConfig c = greedy();
    c.repetition_penalty = 4.0f;
    std::vector<float> logits = {1.0f, 3.0f, 2.0f};
    std::mt19937_64 rng(1);
    check(sampler.sample(c, logits.data(), 3, {}, {1}, rng) == 2, "greedy: the argmax after penalties");
}

void test_cuts_leave_the_most_likely_token() {
    Sampler sampler;
    const std::vector<float> base = {0.1f, 2.0f, 1.9f, -3.0f, 1.5f};
    for (int which = 0; which < 3; ++which) {
        SamplingConfig c;
        c.temperature = 1.0f;
        if (which == 0) c.top_k = 1;
        if (which == 1) c.top_p = 1e-4f;
        if (which == 2) c.min_p = 1.0f;
        int others = 0;
        for (uint64_t seed = 0; seed < 200; ++seed) {
            std::vector<float> logits = base;
            std::mt19937_64 rng(seed);
            others += sampler.sample(c, logits.data(), 5, {}, {}, rng) != 1;
        }
        check(others == 0, "cut " + std::to_string(which) + " (top_k=1, tiny top_p, min_p=1) keeps only the argmax");
    }
}

void test_draws_follow_the_softmax() {
    Sampler sampler;
    SamplingConfig c;
    c.temperature = 0.5f;
    // At temperature 0.5 these logits give probabilities 0.6 / 0.3 / 0.1.
    const std::vector<float> base = {0.5f * std::log(0.6f), 0.5f * std::log(0.3f), 0.5f * std::log(0.1f)};
    std::vector<int> hits(3, 0);
    std::mt19937_64 rng(42);
    const int n = 30000;
    for (int i = 0; i < n; ++i) {
        std::vector<float> logits = base;
        ++hits[sampler.sample(c, logits.data(), 3, {}, {}, rng)];
    }
    // Fixed seed, so deterministic; the bound is ~5 standard deviations.
    check(std::fabs(hits[0] / double(n) - 0.6) < 0.015 && std::fabs(hits[1] / double(n) - 0.3) < 0.015 &&
              std::fabs(hits[2] / double(n) - 0.1) < 0.01,
          "draws follow the softmax at the temperature: " + std::to_string(hits[0]) + "/" + std::to_string(hits[1]) +
              "/" + std::to_string(hits[2]));

    // top_p 0.85 keeps the two most likely (0.6 + 0.3 >= 0.85), renormalized.
    c.top_p = 0.85f;
    hits.assign(3, 0);
    for (int i = 0; i < n; ++i) {
        std::vector<float> logits = base;
        ++hits[sampler.sample(c, logits.data(), 3, {}, {}, rng)];
    }
    check(hits[2] == 0 && std::fabs(hits[0] / double(n) - 2.0 / 3.0) < 0.015, "top_p: the nucleus, renormalized");
}

void test_seeded_requests_repeat() {
    // Two requests with the same seed draw the same tokens, whatever the
    // sampler did for other requests in between (the RNG is the request's).
    Sampler a, b;
    SamplingConfig c;
    c.temperature = 1.0f;
    std::vector<float> base(64);
    for (size_t i = 0; i < base.size(); ++i) base[i] = std::sin(float(i));
    std::mt19937_64 first(7), second(7), other(99);
    bool same = true;
    for (int step = 0; step < 50; ++step) {
        std::vector<float> l1 = base, l2 = base, l3 = base;
        const int32_t t1 = a.sample(c, l1.data(), 64, {}, {}, first);
        b.sample(c, l3.data(), 64, {}, {}, other);
        same = same && t1 == b.sample(c, l2.data(), 64, {}, {}, second);
    }
    check(same, "a seeded request repeats, other requests sampled in between");
}

void test_logprobs() {
    Sampler sampler;
    const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f};
    const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + 1.0);
    const TokenLogprob lp = sampler.logprobs(logits.data(), 4, 0, 3);
    check(near(lp.logprob, float(1.0 - z), 1e-5f), "logprob of the sampled token is log_softmax");
    check(lp.top.size() == 3 && lp.top[0].first == 1 && lp.top[1].first == 2 && lp.top[2].first == 0 &&
              near(lp.top[0].second, float(3.0 - z), 1e-5f),
          "top logprobs: most likely first, ties by id");
    check(sampler.logprobs(logits.data(), 4, 3, 0).top.empty(), "no alternatives asked, none given");
    check(lp.rank == 3 && sampler.logprobs(logits.data(), 4, 1, 0).rank == 2 &&
              sampler.logprobs(logits.data(), 4, 3, 0).rank == 4,
          "rank: the tokens at least as likely, ties included (vLLM's)");
}

void test_vocabulary_size_changes() {
    // A large vocabulary, then a small one, then the large one again: the
    // scratch is sized for the largest and stays clean.
    Sampler sampler;
    SamplingConfig c = greedy();
    c.repetition_penalty = 2.0f;
    c.presence_penalty = 1.0f;
    std::vector<float> big(1000, 1.0f), small(10, 1.0f), again(1000, 1.0f);
    sampler.apply_penalties(c, big.data(), 1000, {999}, {500, 500});
    sampler.apply_penalties(c, small.data(), 10, {999}, {5});
    sampler.apply_penalties(c, again.data(), 1000, {}, {});
    check(near(big[999], 0.5f) && near(big[500], -0.5f), "large vocabulary penalized");
    check(near(small[5], -0.5f) && near(small[0], 1.0f), "small vocabulary: out-of-range prompt id ignored");
    bool clean = true;
    for (float v : again) clean = clean && near(v, 1.0f);
    check(clean, "no penalty state left behind");
}

LogitAdjustments adjustments_of(const char* json) { return LogitAdjustments::from_json(json::parse(json)); }

// The INVALID_ARGUMENT message `json` is refused with ("" if accepted).
std::string refusal(const char* json, int32_t vocab_size = 1000) {
    try {
        adjustments_of(json).check_vocabulary(vocab_size);
    } catch (const Error& e) {
        return e.status() == VLLM_ERR_INVALID_ARGUMENT ? e.what() : "wrong status";
    }
    return "";
}

void test_logit_adjustments() {
    const LogitAdjustments a = adjustments_of(R"({"logit_bias": {"4": 2.5, "1": -100}, "allowed_token_ids": [4, 0, 2]})");
    check(a.bias.size() == 2 && a.bias[0].first == 1 && a.bias[1].first == 4, "logit_bias: sorted by token id");
    check(a.allowed == std::vector<int32_t>({0, 2, 4}), "allowed_token_ids: sorted");
    std::vector<float> logits = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    a.apply(logits.data(), 6);
    check(logits[0] == 1.0f && logits[2] == 3.0f && logits[4] == 7.5f, "allowed tokens keep their logits, plus bias");
    check(std::isinf(logits[1]) && std::isinf(logits[3]) && std::isinf(logits[5]) && logits[5] < 0,
          "every other token masked, the bias of a masked token no help");
    check(a.leaves_a_token(logits.data()), "an allowed token is left");
    check(a.allows(2) && !a.allows(3) && adjustments_of("{}").allows(3), "allows: the list, or every token");
    std::vector<float> masked(6, -INFINITY);
    a.apply(masked.data(), 6);
    check(!a.leaves_a_token(masked.data()), "no allowed token left when the masks took them all");
    const LogitAdjustments bias_only = adjustments_of(R"({"logit_bias": {"0": -100}, "allowed_token_ids": null})");
    std::vector<float> row = {3.0f, 2.0f};
    bias_only.apply(row.data(), 2);
    check(row[0] == -97.0f && row[1] == 2.0f && bias_only.leaves_a_token(row.data()), "a bias alone masks nothing");
    check(adjustments_of("{}").empty() && adjustments_of(R"({"logit_bias": {}})").empty(), "nothing given: empty");

    check(refusal(R"({"logit_bias": {"999": 1}, "allowed_token_ids": [999]})") == "", "ids below the vocabulary size");
    check(refusal(R"({"logit_bias": {"1000": 1}})").find("'logit_bias' token id 1000 is outside the vocabulary (1000") == 0,
          "a logit_bias id at the vocabulary size refused");
    check(refusal(R"({"allowed_token_ids": [3, 1000]})").find("'allowed_token_ids' token id 1000") == 0,
          "an allowed id at the vocabulary size refused");
    check(refusal(R"({"logit_bias": {"3": 100.5}})").find("'logit_bias[\"3\"]' must be in [-100, 100]") == 0,
          "bias above 100 refused");
    check(refusal(R"({"logit_bias": {"3": -1e999}})") != "", "an infinite bias refused");
    check(refusal(R"({"logit_bias": {"3x": 1}})").find("keys must be token ids (got '3x')") != std::string::npos,
          "a key that is not a number refused");
    check(refusal(R"({"logit_bias": {"99999999999": 1}})").find("keys must be token ids") != std::string::npos,
          "a key beyond int32 refused");
    check(refusal(R"({"logit_bias": {"7": 1, "007": 1}})").find("token 7 twice") != std::string::npos,
          "one token named twice refused");
    check(refusal(R"({"logit_bias": "x"})").find("'logit_bias' must be an object") == 0, "logit_bias not an object");
    check(refusal(R"({"allowed_token_ids": []})") == "'allowed_token_ids' must not be empty", "empty allowed list");
    check(refusal(R"({"allowed_token_ids": [1, -2]})").find("'allowed_token_ids[1]' must be a token id") == 0,
          "a negative allowed id refused");
    check(refusal(R"({"allowed_token_ids": 5})").find("'allowed_token_ids' must be an array") == 0,
          "allowed_token_ids not an array");
}

}  // namespace

int main() {
    test_repetition_penalty();
    test_presence_and_frequency();
    test_greedy_after_penalties();
    test_cuts_leave_the_most_likely_token();
    test_draws_follow_the_softmax();
    test_seeded_requests_repeat();
    test_logprobs();
    test_vocabulary_size_changes();
    test_logit_adjustments();
    return report();
}
