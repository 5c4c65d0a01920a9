// Helpers for the structured-output programs that use a real vocabulary
// (test_structured_vocab.cpp, structured_tool.cpp): loading the tokenizer
// from a GGUF, and a decoding simulation that picks allowed tokens at
// random and then steers to the end of the grammar.
#pragma once
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/gguf_reader.h"
#include "structured/parser_states.h"
#include "structured/structured_output.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "check.h"

namespace structured_sim {

using namespace vllm;
using namespace vllm::structured;

struct LoadedVocabulary {
    std::unique_ptr<Tokenizer> tokenizer;
    std::shared_ptr<const Vocabulary> vocabulary;
};

inline LoadedVocabulary load_vocabulary(const std::string& gguf_path) {
    LoadedVocabulary out;
    const GgufFile file(gguf_path);
    out.tokenizer = Tokenizer::create(TokenizerData::from_gguf(file));
    out.vocabulary = std::make_shared<Vocabulary>(*out.tokenizer);
    return out;
}

// A test program's main over SmolLM2's vocabulary: `program MODEL.gguf`;
// an Error escaping `tests` fails the run; returns report()'s status.
template <class Tests>
int run_with_vocabulary(int argc, char** argv, Tests tests) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    try {
        tests(load_vocabulary(argv[1]));
    } catch (const Error& e) {
        check(false, std::string("unexpected error: ") + e.what());
    }
    return report();
}

// The shortest bytes taking `state` to one where the grammar can end
// (breadth-first over byte transitions); `found` false when none is seen
// within max_states states.
inline std::string shortest_completion(ParserStates& states, int32_t state, bool& found, size_t max_states = 20000) {
    found = true;
    if (states.can_end(state)) return "";
    std::unordered_map<int32_t, std::pair<int32_t, uint8_t>> parent;  // state -> (previous, byte)
    std::deque<int32_t> queue = {state};
    parent[state] = {-1, 0};
    while (!queue.empty() && parent.size() < max_states) {
        const int32_t s = queue.front();
        queue.pop_front();
        for (int b = 0; b < 256; ++b) {
            const int32_t t = states.next(s, static_cast<uint8_t>(b));
            if (t == ParserStates::kDead || parent.count(t)) continue;
            parent[t] = {s, static_cast<uint8_t>(b)};
            if (states.can_end(t)) {
                std::string path;
                for (int32_t x = t; parent[x].first >= 0; x = parent[x].first) path.insert(path.begin(), static_cast<char>(parent[x].second));
                return path;
            }
            queue.push_back(t);
        }
    }
    found = false;
    return "";
}

struct Simulation {
    std::string text;             // bytes of the accepted tokens (EOG excluded)
    std::vector<int32_t> tokens;  // every accepted token, EOG included
    bool complete = false;        // ended where the grammar can end
    int mask_calls = 0;
    double mask_seconds = 0;
    int jumped_tokens = 0;
};

// Decodes with `matcher`: random allowed tokens for `random_steps` steps
// (an allowed EOG taken with probability 1/8), then the longest allowed
// token along the shortest completion, then EOG. With `jump_forward`,
// the matcher's forced tokens are appended after every sampled token.
inline Simulation simulate(const std::shared_ptr<const Grammar>& grammar, const std::shared_ptr<const Vocabulary>& vocab,
                           uint64_t seed, int random_steps, bool jump_forward, int max_steps = 400) {
    GrammarMatcher matcher(grammar, vocab);
    ParserStates tracker(grammar);
    int32_t tracked = tracker.initial();
    std::mt19937_64 rng(seed);
    Simulation sim;
    std::vector<uint64_t> bits;
    auto accept = [&](int32_t id) {
        if (!matcher.accept_token(id)) return false;
        sim.tokens.push_back(id);
        if (!vocab->is_eog(id)) {
            sim.text += vocab->token_bytes(id);
            tracked = tracker.advance(tracked, vocab->token_bytes(id));
        }
        return true;
    };
    for (int step = 0; step < max_steps && !matcher.is_finished(); ++step) {
        const auto start = std::chrono::steady_clock::now();
        matcher.fill_allowed(bits);
        sim.mask_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ++sim.mask_calls;
        std::vector<int32_t> allowed;
        int32_t eog = -1;
        for (int32_t id = 0; id < vocab->size(); ++id) {
            if (!test_bit(bits, id)) continue;
            if (vocab->is_eog(id)) {
                eog = id;
            } else {
                allowed.push_back(id);
            }
        }
        int32_t pick = -1;
        if (step < random_steps) {
            if (eog >= 0 && (allowed.empty() || rng() % 8 == 0)) {
                pick = eog;
            } else if (!allowed.empty()) {
                pick = allowed[rng() % allowed.size()];
            }
        } else if (eog >= 0) {
            pick = eog;
        } else {
            bool found = false;
            const std::string path = shortest_completion(tracker, tracked, found);
            size_t best = 0;
            for (int32_t id : allowed) {
                const std::string_view b = vocab->token_bytes(id);
                if (b.size() > best && path.compare(0, b.size(), b) == 0) {
                    best = b.size();
                    pick = id;
                }
            }
            if (pick < 0 && !allowed.empty()) pick = allowed[0];
        }
        if (pick < 0 || !accept(pick)) break;
        if (jump_forward) {
            for (int32_t id : matcher.jump_forward_tokens()) {
                if (!accept(id)) break;
                ++sim.jumped_tokens;
            }
        }
    }
    sim.complete = matcher.is_finished() || matcher.can_end();
    return sim;
}

}  // namespace structured_sim
