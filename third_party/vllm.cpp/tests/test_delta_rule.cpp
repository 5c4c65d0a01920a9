// The gated delta rule's two forms (model/blocks/delta_rule.h) against each
// other on random inputs: the chunked form (prefill) equals the recurrent
// step (decode) in outputs and final state, for runs shorter than, equal to
// and several times a chunk, from a zero and from a nonzero state; a run
// split in two (chunked prefill's chunks, then decode steps) carries its
// state and equals the run in one piece. Also both against a float64
// reference of the definition.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "model/blocks/delta_rule.h"

using namespace vllm;
using vllm_test::check;

namespace {

struct Inputs {
    int64_t n;
    int dk, dv;
    std::vector<float> q, k, v, g, beta, state;
};

void l2(float* x, int n, float scale) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += double(x[i]) * x[i];
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * scale / std::sqrt(s + 1e-6));
}

Inputs random_inputs(int64_t n, int dk, int dv, unsigned seed, bool nonzero_state) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    Inputs in{n, dk, dv};
    in.q.resize(n * dk), in.k.resize(n * dk), in.v.resize(n * dv), in.g.resize(n), in.beta.resize(n);
    for (float& x : in.q) x = normal(rng);
    for (float& x : in.k) x = normal(rng);
    for (float& x : in.v) x = normal(rng);
    for (int64_t t = 0; t < n; ++t) {
        l2(&in.q[t * dk], dk, 1.0f / std::sqrt(float(dk)));
        l2(&in.k[t * dk], dk, 1.0f);
        in.g[t] = -0.5f * unit(rng) * unit(rng);  // decays between exp(-0.5) and 1
        in.beta[t] = unit(rng);
    }
    in.state.assign(size_t(dk) * dv, 0.0f);
    if (nonzero_state)
        for (float& x : in.state) x = 0.3f * normal(rng);
    return in;
}

DeltaRuleRun run_of(const Inputs& in, int64_t first, int64_t n, std::vector<float>& out) {
    DeltaRuleRun r;
    r.n_tokens = n;
    r.dk = in.dk, r.dv = in.dv;
    r.q = in.q.data() + first * in.dk;
    r.k = in.k.data() + first * in.dk;
    r.v = in.v.data() + first * in.dv;
    r.g = in.g.data() + first;
    r.beta = in.beta.data() + first;
    r.qk_stride = in.dk, r.v_stride = in.dv, r.gb_stride = 1;
    r.out = out.data() + first * in.dv;
    r.out_stride = in.dv;
    return r;
}

// The definition in float64: outputs and final state.
void reference(const Inputs& in, std::vector<double>& out, std::vector<double>& S) {
    S.assign(in.state.begin(), in.state.end());
    out.assign(in.n * in.dv, 0.0);
    std::vector<double> kv(in.dv);
    for (int64_t t = 0; t < in.n; ++t) {
        const double decay = std::exp(double(in.g[t]));
        for (double& s : S) s *= decay;
        for (int j = 0; j < in.dv; ++j) {
            kv[j] = 0;
            for (int i = 0; i < in.dk; ++i) kv[j] += S[i * in.dv + j] * in.k[t * in.dk + i];
        }
        for (int i = 0; i < in.dk; ++i)
            for (int j = 0; j < in.dv; ++j)
                S[i * in.dv + j] += in.k[t * in.dk + i] * in.beta[t] * (in.v[t * in.dv + j] - kv[j]);
        for (int j = 0; j < in.dv; ++j)
            for (int i = 0; i < in.dk; ++i) out[t * in.dv + j] += S[i * in.dv + j] * in.q[t * in.dk + i];
    }
}

template <class A, class B>
double max_diff(const A& a, const B& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

void test_forms_agree(int64_t n, int chunk, bool nonzero_state) {
    const int dk = 16, dv = 24;
    const Inputs in = random_inputs(n, dk, dv, static_cast<unsigned>(n * 131 + chunk), nonzero_state);
    std::vector<double> want, want_state;
    reference(in, want, want_state);

    std::vector<float> rec(n * dv), chk(n * dv), scratch;
    std::vector<float> rec_state = in.state, chk_state = in.state;
    delta_rule_recurrent(run_of(in, 0, n, rec), rec_state.data());
    delta_rule_chunked(run_of(in, 0, n, chk), chk_state.data(), chunk, scratch);
    const std::string what = "n=" + std::to_string(n) + " chunk=" + std::to_string(chunk) +
                             (nonzero_state ? " from a state" : " from zero");
    const double tol = 2e-5;
    check(max_diff(rec, want) < tol && max_diff(rec_state, want_state) < tol, "recurrent = definition, " + what);
    check(max_diff(chk, want) < tol && max_diff(chk_state, want_state) < tol,
          "chunked = definition, " + what + " (out " + std::to_string(max_diff(chk, want)) + ")");
    check(max_diff(chk, rec) < tol && max_diff(chk_state, rec_state) < tol, "chunked = recurrent, " + what);

    // Split: a chunked prefill of the first part, then the rest token by
    // token (decode) or chunked again: the state carries over.
    if (n >= 3) {
        const int64_t head = n * 2 / 3;
        std::vector<float> split(n * dv), state = in.state;
        delta_rule_chunked(run_of(in, 0, head, split), state.data(), chunk, scratch);
        for (int64_t t = head; t < n; ++t) delta_rule_recurrent(run_of(in, t, 1, split), state.data());
        check(max_diff(split, rec) < tol && max_diff(state, rec_state) < tol, "prefill then decode = one run, " + what);
        std::vector<float> two(n * dv), state2 = in.state;
        delta_rule_chunked(run_of(in, 0, head, two), state2.data(), chunk, scratch);
        delta_rule_chunked(run_of(in, head, n - head, two), state2.data(), chunk, scratch);
        check(max_diff(two, rec) < tol && max_diff(state2, rec_state) < tol, "two prefill chunks = one run, " + what);
    }
}

}  // namespace

int main() {
    for (int64_t n : {1, 2, 7, 63, 64, 65, 150})
        for (int chunk : {1, 16, 64})
            for (bool nonzero : {false, true}) test_forms_agree(n, chunk, nonzero);
    return vllm_test::report();
}
