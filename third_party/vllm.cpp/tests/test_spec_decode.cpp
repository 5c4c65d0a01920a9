// Speculative decoding without a model: the speculative_config parser and its
// refusals, the n-gram (prompt lookup) proposer, the suffix tree and suffix
// decoding proposer, and the rejection sampler, whose output distribution
// must equal the sampling distribution (a chi-square test over many draws at
// a fixed significance, for several drafts and sampling settings) with the
// draft accepted with probability p(draft), while greedy verification
// accepts exactly the argmax; and the rule with a real draft distribution q
// (the draft model's): drafts drawn from q, verified, give tokens
// distributed as p, accepted with probability sum min(p, q).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "sample/rejection_sampler.h"
#include "spec_decode/ngram_proposer.h"
#include "spec_decode/speculation_costs.h"
#include "spec_decode/speculation_policy.h"
#include "spec_decode/speculative_config.h"
#include "spec_decode/suffix_proposer.h"
#include "spec_decode/suffix_tree.h"
#include "util/error.h"

using namespace vllm;

namespace {

using Tokens = std::vector<int32_t>;

// The message of the INVALID_ARGUMENT that parsing `json` throws ("" when it parses).
std::string refusal(const std::string& json) {
    try {
        SpeculativeConfig::parse(json);
    } catch (const Error& e) {
        return e.status() == VLLM_ERR_INVALID_ARGUMENT ? e.what() : std::string("wrong status: ") + e.what();
    }
    return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void test_config() {
    SpeculativeConfig c = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 4})");
    check(c.method == SpeculativeMethod::NGRAM && c.num_speculative_tokens == 4 && c.prompt_lookup_min == 5 &&
              c.prompt_lookup_max == 5,
          "config: ngram with vLLM's default lookup 5..5");
    c = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})");
    check(c.prompt_lookup_min == 4 && c.prompt_lookup_max == 4, "config: the one lookup bound given is both");
    c = SpeculativeConfig::parse(R"({"model": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 3})");
    check(c.method == SpeculativeMethod::NGRAM && c.prompt_lookup_min == 2 && c.prompt_lookup_max == 3,
          "config: method inferred from model 'ngram'");
    c = SpeculativeConfig::parse(R"({"method": "suffix"})");
    check(c.method == SpeculativeMethod::SUFFIX && c.num_speculative_tokens == 24 &&
              c.suffix_decoding_max_tree_depth == 24 && c.suffix_decoding_max_cached_requests == 10000 &&
              c.suffix_decoding_max_spec_factor == 1.0 && c.suffix_decoding_min_token_prob == 0.1,
          "config: suffix with vLLM's defaults (num_speculative_tokens = tree depth)");
    c = SpeculativeConfig::parse(R"({"method": "suffix", "suffix_decoding_max_tree_depth": 8, "num_speculative_tokens": null})");
    check(c.num_speculative_tokens == 8, "config: null is vLLM's None (the default)");
    c = SpeculativeConfig::parse(R"({"model": ".", "num_speculative_tokens": 3})");
    check(c.method == SpeculativeMethod::DRAFT_MODEL && c.model == "." && c.num_speculative_tokens == 3 &&
              std::string(method_name(c.method)) == "draft_model",
          "config: method inferred as draft_model from a model path");
    check(c.draft_vocab_size == 0, "config: the draft proposes from the whole vocabulary by default");
    c = SpeculativeConfig::parse(R"({"model": ".", "num_speculative_tokens": 3, "draft_vocab_size": 16384})");
    check(c.draft_vocab_size == 16384, "config: draft_vocab_size");
    check(c.draft_confidence_threshold == 0.5, "config: a draft ends after a token it gave less than 0.5 by default");
    c = SpeculativeConfig::parse(R"({"model": ".", "num_speculative_tokens": 3, "draft_confidence_threshold": 0})");
    check(c.draft_confidence_threshold == 0.0, "config: draft_confidence_threshold 0 runs every draft to its length");

    const std::vector<std::pair<std::string, std::string>> refused = {
        {"{\"method\": \"ngram\"", "not valid JSON"},
        {"[1]", "JSON object"},
        {R"({"method": "eagle", "num_speculative_tokens": 2})", "'method' 'eagle' is not supported"},
        {R"({"num_speculative_tokens": 2})", "'method' is required"},
        {R"({"method": "ngram"})", "'num_speculative_tokens' is required"},
        {R"({"method": "ngram", "num_speculative_tokens": 0})", "'num_speculative_tokens' must be an integer from 1"},
        {R"({"method": "ngram", "num_speculative_tokens": -3})", "'num_speculative_tokens'"},
        {R"({"method": "ngram", "num_speculative_tokens": 100000})", "'num_speculative_tokens' must be an integer from 1 to 64"},
        {R"({"method": "ngram", "num_speculative_tokens": 2.5})", "'num_speculative_tokens'"},
        {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4, "prompt_lookup_max": 2})",
         "'prompt_lookup_min' (4) must be <= prompt_lookup_max (2)"},
        {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 0})", "'prompt_lookup_min'"},
        {R"({"method": "suffix", "suffix_decoding_min_token_prob": 1.5})", "'suffix_decoding_min_token_prob'"},
        {R"({"method": "suffix", "suffix_decoding_max_spec_factor": -1})", "'suffix_decoding_max_spec_factor'"},
        {R"({"method": "suffix", "suffix_decoding_max_tree_depth": 0})", "'suffix_decoding_max_tree_depth'"},
        {R"({"method": "suffix", "suffix_decoding_max_cached_requests": -1})", "'suffix_decoding_max_cached_requests'"},
        {R"({"method": "ngram", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1})",
         "unknown or unsupported field 'draft_tensor_parallel_size'"},
        {R"({"method": "ngram", "num_speculative_tokens": 2, "rejection_sample_method": "synthetic"})",
         "'rejection_sample_method' 'synthetic' is not supported"},
        {R"({"method": "draft_model", "model": "/nonexistent/draft.gguf", "num_speculative_tokens": 2})",
         "does not exist: '/nonexistent/draft.gguf'"},
        {R"({"method": "draft_model", "num_speculative_tokens": 2})", "'model' is required"},
        {R"({"method": "draft_model", "model": "."})", "'num_speculative_tokens' is required with method 'draft_model'"},
        {R"({"method": 3})", "'method' must be a string"},
        {R"({"method": "ngram", "num_speculative_tokens": 2, "draft_vocab_size": 1024})",
         "'draft_vocab_size' applies to method 'draft_model' only"},
        {R"({"model": ".", "num_speculative_tokens": 2, "draft_vocab_size": -1})", "'draft_vocab_size' must be an integer"},
        {R"({"model": ".", "num_speculative_tokens": 2, "draft_confidence_threshold": 1.5})",
         "'draft_confidence_threshold' must be a number from 0.0 to 1.0"},
        {R"({"model": ".", "num_speculative_tokens": 2, "draft_confidence_threshold": "high"})",
         "'draft_confidence_threshold' must be a number"},
        {R"({"method": "suffix", "draft_confidence_threshold": 0.3})",
         "'draft_confidence_threshold' applies to method 'draft_model' only"},
    };
    for (const auto& [json, expected] : refused) {
        const std::string message = refusal(json);
        check(contains(message, expected), "config refused: " + json + " -> '" + message + "' names '" + expected + "'");
    }
}

void test_ngram() {
    NgramProposer p(2, 3);
    Tokens draft;
    //            0  1  2  3  4  5  6  7  8  9
    Tokens seq = {1, 2, 3, 4, 5, 9, 9, 2, 3, 4};
    p.propose(0, seq, 5, 3, draft);
    check(draft == Tokens{5, 9, 9}, "ngram: the tokens after the matched 3-gram (2 3 4)");
    p.propose(0, seq, 5, 1, draft);
    check(draft == Tokens{5}, "ngram: at most max_tokens");
    p.propose(0, {1, 2, 3, 4, 5, 6}, 6, 3, draft);
    check(draft.empty(), "ngram: nothing without a match");
    // 2-gram (7 8) appears twice: the latest occurrence is taken.
    p.propose(0, {7, 8, 1, 7, 8, 2, 9, 7, 8}, 9, 2, draft);
    check(draft == Tokens{2, 9}, "ngram: the latest occurrence of the longest match");
    // The longer match beats a more recent shorter one.
    p.propose(0, {6, 7, 8, 1, 5, 7, 8, 2, 6, 7, 8}, 11, 1, draft);
    check(draft == Tokens{1}, "ngram: the longest match first");
    // A repetition: the continuation runs into the matched text itself.
    p.propose(0, {4, 4, 4, 4}, 4, 5, draft);
    check(draft == Tokens{4}, "ngram: the continuation stops at the end of the sequence");
    NgramProposer single(1, 1);
    single.propose(0, {5, 1, 2, 5}, 4, 2, draft);
    check(draft == Tokens{1, 2}, "ngram: 1-grams");
    p.propose(0, {3, 3}, 2, 2, draft);
    check(draft.empty(), "ngram: too short for min_n");
}

void test_suffix_tree() {
    SuffixTree t(4);
    for (int32_t tok : Tokens{1, 2, 3, 1, 2, 4, 1, 2}) t.append(tok);
    // After "1 2": seen followed by 3 once and 4 once (the final "1 2" has no continuation yet).
    SuffixTree::Draft d = t.speculate(Tokens{1, 2}.data(), 2, 4, 1.0, 0.0);
    check(d.tokens.size() == 2 && (d.tokens[0] == 3), "suffix tree: ties go to the smaller token; factor 1.0 limits to the match length");
    check(std::fabs(d.score - (0.5 + 0.5)) < 1e-9, "suffix tree: probabilities are shares of the continuations seen");
    d = t.speculate(Tokens{1, 2}.data(), 2, 4, 1.0, 0.6);
    check(d.tokens.empty(), "suffix tree: min_token_prob cuts an uncertain draft");
    d = t.speculate(Tokens{9}.data(), 1, 4, 1.0, 0.0);
    check(d.tokens.empty(), "suffix tree: no match, no draft");
    // A copy in progress: the longest match (5 tokens) leaves one token of
    // depth below it, a 3-token match leaves three.
    SuffixTree copy(6);
    for (int32_t tok : Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5}) copy.append(tok);
    d = copy.speculate(Tokens{1, 2, 3, 4, 5}.data(), 5, 8, 1.0, 0.0);
    check(d.tokens == Tokens{6, 7, 8}, "suffix tree: the best-scoring match, not the longest");

    SuffixTree g(3);
    const Tokens a = {5, 6, 7, 8}, b = {5, 6, 9};
    g.add(a);
    g.add(b);
    g.add(a);
    d = g.speculate(Tokens{5}.data(), 1, 3, 2.0, 0.0);
    check(d.tokens == Tokens{6, 7}, "suffix tree: the most frequent continuation, depth-limited");
    g.remove(a);
    g.remove(a);
    d = g.speculate(Tokens{5}.data(), 1, 3, 2.0, 0.0);
    check(d.tokens == Tokens{6, 9}, "suffix tree: removal takes back what was added");
    g.remove(b);
    check(g.num_nodes() == 1, "suffix tree: removing everything leaves the root only");
    g.add(b);
    check(g.num_nodes() == 1 + 3 + 2 + 1, "suffix tree: released nodes are reused");
}

void test_suffix_proposer() {
    SpeculativeConfig c = SpeculativeConfig::parse(R"({"method": "suffix", "suffix_decoding_max_cached_requests": 1})");
    SuffixProposer p(c);
    Tokens draft;
    // A request copying its own prompt.
    Tokens seq = {10, 11, 12, 13, 14, 15, 16, 17, 1, 10, 11, 12};
    p.propose(1, seq, 9, 8, draft);
    check(draft == Tokens{13, 14, 15}, "suffix: continues the prompt, at most match length tokens (spec factor 1)");
    seq.push_back(13);
    seq.push_back(14);
    p.propose(1, seq, 9, 2, draft);
    check(draft == Tokens{15, 16}, "suffix: the request's tree grows with its tokens; max_tokens caps");
    // Finished outputs teach later requests, and are evicted first in, first out.
    p.finished(1, {1, 2, 30, 31, 32, 33}, 2, true);
    check(p.num_cached_outputs() == 1, "suffix: a finished output is cached");
    p.propose(2, {7, 30, 31}, 1, 4, draft);
    check(draft == Tokens{32, 33}, "suffix: a match in a cached output");
    p.finished(2, {7, 30, 31, 40, 41}, 1, false);
    check(p.num_cached_outputs() == 1, "suffix: an aborted request's output is not cached");
    p.finished(3, {1, 50, 51, 52}, 1, true);
    p.propose(4, {30, 31}, 2, 4, draft);
    check(draft.empty() && p.num_cached_outputs() == 1, "suffix: the oldest cached output is evicted");
    p.propose(4, {60, 50, 51}, 1, 4, draft);
    check(draft == Tokens{52}, "suffix: the newest output is there");
}

// Chi-square statistic of observed counts against expected probabilities
// (bins with expected count < 5 merged into one).
double chi_square(const std::map<int32_t, int>& observed, const std::vector<double>& p, int n, int& dof) {
    double stat = 0.0, merged_e = 0.0, merged_o = 0.0;
    dof = -1;
    for (size_t t = 0; t < p.size(); ++t) {
        const double e = p[t] * n;
        const auto it = observed.find(static_cast<int32_t>(t));
        const double o = it == observed.end() ? 0.0 : it->second;
        if (e < 5.0) {
            merged_e += e;
            merged_o += o;
            continue;
        }
        stat += (o - e) * (o - e) / e;
        ++dof;
    }
    if (merged_e > 0.0) {
        if (merged_e >= 1e-12) stat += (merged_o - merged_e) * (merged_o - merged_e) / merged_e;
        ++dof;
    }
    return stat;
}

// Upper 0.1% point of chi-square with `dof` degrees of freedom (Wilson-Hilferty).
double chi_square_critical(int dof) {
    const double z = 3.090;  // one-sided 0.999 normal quantile
    const double k = dof;
    const double a = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// The distribution Sampler::sample draws from, computed independently:
// penalties (the sampler's, tested in test_sampler), softmax at the
// temperature, min-p, top-k, top-p, normalised.
std::vector<double> target_distribution(const SamplingConfig& c, std::vector<float> logits, const Tokens& prompt,
                                        const Tokens& output) {
    Sampler s;
    const int32_t vocab = static_cast<int32_t>(logits.size());
    s.apply_penalties(c, logits.data(), vocab, prompt, output);
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    std::vector<double> w(vocab);
    for (int32_t t = 0; t < vocab; ++t) w[t] = std::exp((logits[t] - max_logit) / c.temperature);
    std::vector<int32_t> order(vocab);
    for (int32_t t = 0; t < vocab; ++t) order[t] = t;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return w[a] > w[b]; });
    size_t keep = 0;
    while (keep < order.size() && w[order[keep]] >= c.min_p) ++keep;
    if (c.top_k > 0) keep = std::min(keep, static_cast<size_t>(c.top_k));
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += w[order[i]];
    double mass = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
        mass += w[order[i]];
        if (mass >= c.top_p * total) {
            cut = i + 1;
            break;
        }
    }
    std::vector<double> p(vocab, 0.0);
    for (size_t i = 0; i < cut; ++i) p[order[i]] = w[order[i]] / mass;
    return p;
}

void test_rejection_sampler_distribution() {
    const std::vector<float> logits = {2.0f, 1.5f, 0.3f, -0.5f, 1.0f, 0.0f, -2.0f, 0.7f};
    const Tokens prompt = {1, 2}, output = {4, 4, 0};
    struct Case {
        std::string name;
        SamplingConfig config;
        int32_t draft;
    };
    std::vector<Case> cases;
    SamplingConfig plain;
    plain.temperature = 0.8f;
    cases.push_back({"likely draft", plain, 0});
    cases.push_back({"unlikely draft", plain, 6});
    SamplingConfig cut = plain;
    cut.top_k = 4;
    cut.top_p = 0.9f;
    cases.push_back({"draft cut by top-k/top-p", cut, 6});
    cases.push_back({"draft kept by top-k/top-p", cut, 1});
    SamplingConfig penalised = plain;
    penalised.repetition_penalty = 1.3f;
    penalised.frequency_penalty = 0.4f;
    penalised.presence_penalty = 0.2f;
    penalised.min_p = 0.05f;
    cases.push_back({"penalties and min-p", penalised, 4});

    const int n = 60000;
    for (const Case& tc : cases) {
        const std::vector<double> p = target_distribution(tc.config, logits, prompt, output);
        Sampler sampler;
        std::mt19937_64 rng(1234);
        std::map<int32_t, int> counts;
        int accepted = 0;
        bool consistent = true;
        for (int i = 0; i < n; ++i) {
            std::vector<float> row = logits;
            const Verdict v = verify_draft_token(sampler, tc.config, row.data(), static_cast<int32_t>(row.size()),
                                                 prompt, output, tc.draft, rng);
            ++counts[v.token];
            accepted += v.accepted;
            consistent = consistent && v.accepted == (v.token == tc.draft);
        }
        check(consistent, "rejection sampler (" + tc.name + "): a rejected draft is never the replacement");
        int dof = 0;
        const double stat = chi_square(counts, p, n, dof);
        check(stat < chi_square_critical(dof), "rejection sampler (" + tc.name + "): chi-square " + std::to_string(stat) +
                                                   " below the 0.1% critical value " +
                                                   std::to_string(chi_square_critical(dof)) + " (" + std::to_string(dof) +
                                                   " dof)");
        // Acceptance is p(draft): within 5 standard deviations.
        const double pd = p[tc.draft], sd = std::sqrt(pd * (1.0 - pd) / n);
        check(std::fabs(double(accepted) / n - pd) <= 5.0 * sd + 1e-12,
              "rejection sampler (" + tc.name + "): acceptance rate " + std::to_string(double(accepted) / n) +
                  " is p(draft) = " + std::to_string(pd));
        // The same generator state gives the ordinary sampler's token: seeded
        // output does not depend on speculation.
        std::mt19937_64 a(99), b(99);
        bool same = true;
        for (int i = 0; i < 2000; ++i) {
            std::vector<float> row = logits, row2 = logits;
            const Verdict v = verify_draft_token(sampler, tc.config, row.data(), static_cast<int32_t>(row.size()),
                                                 prompt, output, tc.draft, a);
            Sampler plain_sampler;
            same = same && v.token == plain_sampler.sample(tc.config, row2.data(), static_cast<int32_t>(row2.size()),
                                                           prompt, output, b);
        }
        check(same, "rejection sampler (" + tc.name + "): the ordinary sampler's token for the same generator state");
    }
    // A wrong distribution fails the test: accepting the draft always.
    {
        const std::vector<double> p = target_distribution(plain, logits, prompt, output);
        std::map<int32_t, int> biased;
        biased[1] = n;
        int dof = 0;
        check(chi_square(biased, p, n, dof) > chi_square_critical(dof), "chi-square rejects a wrong distribution");
    }
}

void test_rejection_sampler_with_q() {
    const std::vector<float> logits = {2.0f, 1.5f, 0.3f, -0.5f, 1.0f, 0.0f, -2.0f, 0.7f};
    const int32_t vocab = static_cast<int32_t>(logits.size());
    const Tokens prompt = {1, 2}, output = {4, 4, 0};
    SamplingConfig plain;
    plain.temperature = 0.8f;
    SamplingConfig cut = plain;
    cut.top_k = 3;
    SamplingConfig penalised = plain;
    penalised.repetition_penalty = 1.3f;
    penalised.presence_penalty = 0.2f;
    auto normalised = [](std::vector<float> w) {
        float total = 0.0f;
        for (float x : w) total += x;
        for (float& x : w) x /= total;
        return w;
    };
    struct Case {
        std::string name;
        SamplingConfig config;
        std::vector<float> q;
    };
    const std::vector<Case> cases = {
        {"a draft model's q", plain, normalised({0.1f, 0.4f, 0.05f, 0.05f, 0.2f, 0.1f, 0.05f, 0.05f})},
        {"uniform q", plain, normalised(std::vector<float>(vocab, 1.0f))},
        {"q outside top-k", cut, normalised({0.05f, 0.05f, 0.1f, 0.3f, 0.05f, 0.2f, 0.2f, 0.05f})},
        {"penalties", penalised, normalised({0.3f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f})},
    };
    const int n = 60000;
    for (const Case& tc : cases) {
        const std::vector<double> p = target_distribution(tc.config, logits, prompt, output);
        Sampler sampler;
        {
            std::vector<float> row = logits;
            const std::vector<float>& dense = sampler.distribution(tc.config, row.data(), vocab, prompt, output);
            double worst = 0.0;
            for (int32_t t = 0; t < vocab; ++t) worst = std::max(worst, std::fabs(dense[t] - p[t]));
            check(worst < 1e-5, "Sampler::distribution (" + tc.name + ") is the sampling distribution");
        }
        std::mt19937_64 rng(4321), draft_rng(8765);
        std::map<int32_t, int> counts;
        int accepted = 0;
        for (int i = 0; i < n; ++i) {
            const int32_t draft = draw_index(tc.q.data(), vocab, draft_rng);
            std::vector<float> row = logits;
            const Verdict v = verify_sampled_draft_token(sampler, tc.config, row.data(), vocab, prompt, output, draft,
                                                         tc.q.data(), rng);
            ++counts[v.token];
            accepted += v.accepted;
        }
        int dof = 0;
        const double stat = chi_square(counts, p, n, dof);
        check(stat < chi_square_critical(dof), "rejection sampler with q (" + tc.name + "): chi-square " +
                                                   std::to_string(stat) + " below the 0.1% critical value " +
                                                   std::to_string(chi_square_critical(dof)));
        double overlap = 0.0;
        for (int32_t t = 0; t < vocab; ++t) overlap += std::min<double>(p[t], tc.q[t]);
        const double sd = std::sqrt(overlap * (1.0 - overlap) / n);
        check(std::fabs(double(accepted) / n - overlap) <= 5.0 * sd + 1e-12,
              "rejection sampler with q (" + tc.name + "): acceptance " + std::to_string(double(accepted) / n) +
                  " is sum min(p, q) = " + std::to_string(overlap));
    }
    // q equal to p accepts every draft.
    {
        Sampler sampler;
        std::vector<float> row = logits;
        const std::vector<float> q = sampler.distribution(plain, row.data(), vocab, {}, {});
        std::mt19937_64 rng(5), draft_rng(6);
        bool all = true;
        for (int i = 0; i < 2000; ++i) {
            row = logits;
            const int32_t draft = draw_index(q.data(), vocab, draft_rng);
            all = all && verify_sampled_draft_token(sampler, plain, row.data(), vocab, {}, {}, draft, q.data(), rng).accepted;
        }
        check(all, "rejection sampler with q: q = p accepts every draft");
    }
    // Greedy ignores q: the argmax decides.
    {
        Sampler sampler;
        SamplingConfig g;
        g.temperature = 0.0f;
        std::mt19937_64 rng(1);
        const std::vector<float> q = {0.0f, 0.0f, 1.0f};
        std::vector<float> row = {0.1f, 3.0f, 2.0f};
        const Verdict v = verify_sampled_draft_token(sampler, g, row.data(), 3, {}, {}, 2, q.data(), rng);
        check(!v.accepted && v.token == 1, "rejection sampler with q: greedy replaces a non-argmax draft by the argmax");
    }
}

void test_speculation_policy() {
    SpeculativeConfig ngram = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 4})");
    SpeculationPolicy fixed(ngram);
    for (int i = 0; i < 8; ++i) fixed.record(1, 4, 1);  // alpha 1/3, acceptance 25%
    check(fixed.max_draft_tokens(1, 1, false) == 4, "policy: model-free drafts keep their length");
    for (int i = 0; i < 4; ++i) fixed.record(2, 4, 0);
    check(fixed.max_draft_tokens(2, 1, false) == 0, "policy: acceptance below 25% pauses the request");

    SpeculativeConfig draft = ngram;
    draft.method = SpeculativeMethod::DRAFT_MODEL;
    SpeculationPolicy adaptive(draft);
    check(adaptive.max_draft_tokens(1, 1, false) == 4, "policy: a new request drafts num_speculative_tokens");
    for (int i = 0; i < 4; ++i) adaptive.record(1, 4, 1);  // 4 accepted, 4 rejections: alpha 0.5
    check(adaptive.max_draft_tokens(1, 1, false) == 1, "policy: alpha 0.5 -> draft length 1");
    for (int i = 0; i < 16; ++i) adaptive.record(1, 1, 1);  // all accepted
    check(adaptive.max_draft_tokens(1, 1, false) == 4, "policy: full acceptance -> num_speculative_tokens again");
    for (int i = 0; i < 4; ++i) adaptive.record(2, 4, i == 0 ? 3 : 4);  // 15 accepted, 1 rejection
    check(adaptive.max_draft_tokens(2, 1, false) == 4, "policy: a long expected run is capped at num_speculative_tokens");
    for (int i = 0; i < 8; ++i) adaptive.record(3, 2, i % 2 ? 2 : 1);  // 12 accepted, 4 rejections: alpha 0.75
    check(adaptive.max_draft_tokens(3, 1, false) == 3, "policy: alpha 0.75 -> draft length 3");
}

void test_speculation_costs() {
    SpeculationCosts costs;
    check(!costs.forward_seconds(1, 1) && !costs.draft_seconds(), "costs: nothing before a measurement");
    costs.record_forward(1, 1, 0.010);
    costs.record_forward(1, 5, 0.030);
    check(*costs.forward_seconds(1, 1) == 0.010 && *costs.forward_seconds(1, 5) == 0.030, "costs: measured forwards");
    check(std::fabs(*costs.forward_seconds(1, 3) - 0.020) < 1e-12, "costs: interpolated between measured counts");
    check(!costs.forward_seconds(1, 6) && !costs.forward_seconds(1, 0) && !costs.forward_seconds(1, 65),
          "costs: no extrapolation, nothing outside 1..64");
    // Three sequences decoding a token each are not one verifying two drafts.
    costs.record_forward(3, 3, 0.050);
    check(std::fabs(*costs.forward_seconds(1, 3) - 0.020) < 1e-12 && *costs.forward_seconds(3, 3) == 0.050,
          "costs: kept apart by the sequences in the forward");
    check(!costs.forward_seconds(3, 4) && !costs.forward_seconds(2, 2) && !costs.forward_seconds(4, 3),
          "costs: no interpolation across sequence counts, none with more sequences than positions");
    const std::vector<SpeculationCosts::Measured> measured = costs.measured_forwards();
    check(measured.size() == 3 && measured[0].sequences == 1 && measured[1].positions == 5 &&
              measured[2].sequences == 3 && measured[2].seconds == 0.050,
          "costs: measured forwards by sequences, then positions");
    // A median of the last kRecent samples: a few slow steps (a thread put
    // aside) do not move it, and older samples are forgotten.
    costs.record_forward(1, 1, 0.012);
    check(*costs.forward_seconds(1, 1) == 0.010, "costs: the lower middle of an even count");
    costs.record_forward(1, 1, 1.0);
    costs.record_forward(1, 1, 0.011);
    costs.record_forward(1, 1, 0.9);
    check(*costs.forward_seconds(1, 1) == 0.012, "costs: two outliers in five samples do not move the median");
    for (int i = 0; i < SpeculationCosts::kRecent; ++i) costs.record_forward(1, 1, 0.006);
    check(*costs.forward_seconds(1, 1) == 0.006, "costs: samples older than the last kRecent are forgotten");
    costs.record_forward(1, 1, 0.0);
    check(*costs.forward_seconds(1, 1) == 0.006, "costs: a sample of no time is ignored");
    costs.record_forward(1, 100, 1.0);
    check(!costs.forward_seconds(1, 64), "costs: prefill-wide forwards are not recorded");
    costs.record_draft(4, 0.012);
    check(std::fabs(*costs.draft_seconds() - 0.003) < 1e-12, "costs: seconds per draft token");

    // The economics: a forward of k + 1 positions at 1 + 0.3 k decodes (4-bit
    // weights) against 1 + 1.5 k (F16 on AVX2), a draft token at 0.35.
    SpeculationCosts cheap, dear;
    for (int m = 1; m <= 9; ++m) {
        cheap.record_forward(1, m, 0.010 * (1.0 + 0.3 * (m - 1)));
        dear.record_forward(1, m, 0.010 * (1.0 + 1.5 * (m - 1)));
        if (m >= 2) cheap.record_forward(2, m, 0.015 * (1.0 + 0.3 * (m - 2)));
    }
    const DraftChoice good = best_draft_length(0.9, 8, 1, 0.001, cheap);
    check(good.k >= 2 && good.speedup > 1.5, "economics: cheap verification and drafts at 90% acceptance draft long");
    const DraftChoice poor = best_draft_length(0.6, 8, 1, 0.0035, dear);
    check(poor.speedup < 1.0, "economics: dear verification and 60% acceptance do not pay");
    const DraftChoice free_drafts = best_draft_length(0.95, 8, 1, 0.0, cheap);
    check(free_drafts.k == 8, "economics: free drafts at 95% acceptance take the full length");
    check(best_draft_length(0.95, 4, 2, 0.0, cheap).k == 4, "economics: two requests in decode");
    check(best_draft_length(0.9, 4, 1, 0.0, SpeculationCosts{}).k == 0, "economics: unknown costs choose nothing");

    // The policy with measured costs: a new request's first step is plain
    // while T(n) is unknown, then the acceptance rule runs until alpha and
    // the draft cost are measured, then the economics; an unprofitable
    // length pauses and probes again at length 1.
    SpeculativeConfig c = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 8})");
    c.method = SpeculativeMethod::DRAFT_MODEL;
    SpeculationPolicy policy(c);
    check(policy.max_draft_tokens(1, 1, true) == 0, "policy: the first step measures the plain forward");
    policy.costs() = dear;
    check(policy.max_draft_tokens(1, 1, true) == 8, "policy: the acceptance rule before alpha is measured");
    for (int i = 0; i < 4; ++i) policy.record(1, 4, 2);  // 8 accepted, 4 rejections: alpha 2/3
    policy.costs().record_draft(1, 0.0035);
    check(policy.max_draft_tokens(1, 1, true) == 0, "policy: dear verification pauses the request");
    for (int i = 0; i < SpeculationPolicy::kPauseSteps; ++i)
        check(policy.max_draft_tokens(1, 1, true) == 0, "policy: paused for kPauseSteps steps");
    check(policy.max_draft_tokens(1, 1, true) == 1, "policy: after the pause, a probe at length 1");
    policy.costs() = cheap;
    policy.costs().record_draft(1, 0.0035);
    for (int i = 0; i < 16; ++i) policy.record(1, 1, i % 8 ? 1 : 0);  // 14 accepted, 2 rejections
    const int k = policy.max_draft_tokens(1, 1, true);
    check(k == best_draft_length(0.875, 8, 1, 0.0035, policy.costs()).k && k > 1,
          "policy: the economics' length once alpha and the costs are known");
    check(policy.max_draft_tokens(2, 1, false) == 8, "policy: an untimed request keeps the acceptance rule");
}

void test_rejection_sampler_greedy() {
    Sampler sampler;
    SamplingConfig g;
    g.temperature = 0.0f;
    std::mt19937_64 rng(1);
    std::vector<float> row = {0.1f, 3.0f, 2.0f};
    Verdict v = verify_draft_token(sampler, g, row.data(), 3, {}, {}, 1, rng);
    check(v.accepted && v.token == 1, "greedy: the argmax draft is accepted");
    row = {0.1f, 3.0f, 2.0f};
    v = verify_draft_token(sampler, g, row.data(), 3, {}, {}, 2, rng);
    check(!v.accepted && v.token == 1, "greedy: another draft is replaced by the argmax");
    g.repetition_penalty = 4.0f;
    row = {0.1f, 3.0f, 2.0f};
    v = verify_draft_token(sampler, g, row.data(), 3, {}, {1}, 2, rng);
    check(v.accepted && v.token == 2, "greedy: the argmax after penalties");
    row = {0.1f, -INFINITY, 2.0f};
    g.repetition_penalty = 1.0f;
    v = verify_draft_token(sampler, g, row.data(), 3, {}, {}, 1, rng);
    check(!v.accepted && v.token == 2, "greedy: a masked draft is rejected");
}

}  // namespace

int main() {
    test_config();
    test_ngram();
    test_suffix_tree();
    test_suffix_proposer();
    test_rejection_sampler_greedy();
    test_rejection_sampler_distribution();
    test_rejection_sampler_with_q();
    test_speculation_policy();
    test_speculation_costs();
    return report();
}
