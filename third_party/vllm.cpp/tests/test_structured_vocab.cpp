// Structured output against SmolLM2's real vocabulary: the trie, masks
// against brute force, jump-forward, decoding simulations, matcher errors.
//
//   test_structured_vocab MODEL.gguf
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "structured/jump_forward.h"
#include "structured_sim.h"
#include "util/error.h"
#include "check.h"

using namespace vllm;
using namespace vllm::structured;
using structured_sim::simulate;

namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Case {
    std::string name;
    std::shared_ptr<const Grammar> grammar;
    std::vector<std::string> prefixes;  // states to check the mask in
};

std::vector<Case> cases() {
    return {
        {"json object", json_object_grammar(), {"", "{", "{\"", "{\"a", "{\"a\": \"x\\", "{\"a\": [1, ", "{\"a\":1}", "{\"a\": \"\xc3"}},
        {"schema",
         compile_json_schema(R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},
              "kind":{"enum":["cat","dog"]},"n":{"type":"integer","minimum":0,"maximum":120}},"required":["name","kind"]})"),
         {"", "{\"", "{\"name\":\"ab", "{\"name\":\"abcde", "{\"name\":\"a\",\"kind\":\"", "{\"name\":\"a\",\"kind\":\"dog\",\"n\":1"}},
        {"regex", compile_regex("(\\d{3}-)?[A-Z][a-z]+( [A-Z][a-z]+)*"), {"", "123-", "12", "Ab", "Ab C"}},
        {"gbnf list", compile_gbnf("root ::= item (\"\\n\" item)*\nitem ::= \"- \" [a-z ]{1,20}\n"), {"", "- ab", "- ab\n"}},
        {"choice", compile_choice({"positive", "negative", "neutral"}), {"", "ne", "neutral"}},
        {"literal", compile_gbnf("root ::= \"The answer is: \" [0-9]+ \" (final)\"\n"), {"", "The ", "The answer is: 4"}},
    };
}

void test_trie(const Vocabulary& vocab) {
    const TokenTrie& trie = vocab.trie();
    // Rebuild each token's bytes from its trie path.
    std::vector<std::string> path(static_cast<size_t>(trie.max_depth()) + 1);
    int wrong = 0, tokens = 0;
    for (int32_t i = 0; i < trie.node_count(); ++i) {
        path[trie.depth(i)] = path[trie.depth(i) - 1] + static_cast<char>(trie.byte(i));
        for (int32_t t = trie.token_begin(i); t < trie.token_begin(i + 1); ++t) {
            ++tokens;
            wrong += vocab.token_bytes(trie.token_ids()[t]) != path[trie.depth(i)];
        }
    }
    int expected = 0;
    for (int32_t id = 0; id < vocab.size(); ++id) expected += !vocab.token_bytes(id).empty();
    check(wrong == 0 && tokens == expected, "trie spells every token (" + std::to_string(tokens) + " of " +
                                                std::to_string(expected) + ", " + std::to_string(wrong) + " wrong)");
    std::printf("vocabulary: %d tokens, %d in the trie, %d trie nodes, max depth %d\n", vocab.size(), tokens,
                trie.node_count(), trie.max_depth());
}

// The trie is built on first use: threads asking at once all get the one
// trie, and a token's bytes are the tokenizer's own (a view, no copy).
void test_trie_built_once(const Tokenizer& tokenizer) {
    const Vocabulary fresh(tokenizer);
    std::vector<const TokenTrie*> seen(4, nullptr);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&, t] { seen[t] = &fresh.trie(); });
    for (std::thread& th : threads) th.join();
    check(std::all_of(seen.begin(), seen.end(), [&](const TokenTrie* p) { return p == seen[0]; }) &&
              seen[0]->node_count() > 0,
          "concurrent first trie() calls share one trie");
    const int32_t space = tokenizer.encode(" the", false, false).front();
    check(fresh.token_bytes(space).data() == tokenizer.token_view(space, true).data(),
          "vocabulary bytes are views into the tokenizer's table");
}

void test_masks_against_brute_force(const std::shared_ptr<const Vocabulary>& vocab) {
    for (const Case& c : cases()) {
        for (const std::string& prefix : c.prefixes) {
            GrammarMatcher matcher(c.grammar, vocab);
            check(matcher.accept_bytes(prefix), c.name + ": prefix '" + prefix + "' accepted");
            std::vector<uint64_t> bits;
            matcher.fill_allowed(bits);

            ParserStates states(c.grammar);
            const int32_t s = states.advance(states.initial(), prefix);
            const int32_t forced = forced_first_token(*vocab, states, s);
            int wrong = 0, allowed = 0;
            for (int32_t id = 0; id < vocab->size(); ++id) {
                bool expected;
                if (vocab->is_eog(id)) {
                    expected = states.can_end(s);
                } else if (forced >= 0) {
                    expected = id == forced;
                } else {
                    const std::string_view b = vocab->token_bytes(id);
                    expected = !b.empty() && states.advance(s, b) != ParserStates::kDead;
                }
                wrong += expected != test_bit(bits, id);
                allowed += expected;
            }
            check(wrong == 0, c.name + " after '" + prefix + "': mask equals brute force (" + std::to_string(wrong) +
                                  " wrong of " + std::to_string(allowed) + " allowed)");
        }
    }
}

void test_control_tokens_and_errors(const std::shared_ptr<const Vocabulary>& vocab, const Tokenizer& tokenizer) {
    GrammarMatcher m(json_object_grammar(), vocab);
    std::vector<uint64_t> bits;
    m.fill_allowed(bits);
    int control_allowed = 0, control = 0;
    for (int32_t id = 0; id < vocab->size(); ++id) {
        if (vocab->token_bytes(id).empty()) {
            ++control;
            control_allowed += test_bit(bits, id);
        }
    }
    check(control > 0 && control_allowed == 0, "control tokens never allowed (" + std::to_string(control) + " control)");
    const int32_t eos = tokenizer.eos_id();
    check(!test_bit(bits, eos), "EOS not allowed before the grammar can end");
    check(!m.accept_token(eos), "EOS rejected before the end");
    check(!m.accept_token(-1) && !m.accept_token(vocab->size()), "out-of-range ids rejected");
    check(!m.accept_token(tokenizer.encode("]", false, false)[0]), "disallowed token rejected");
    check(m.accept_bytes("{}") && m.can_end() && m.is_finished(), "complete object: can end, finished");
    m.fill_allowed(bits);
    check(test_bit(bits, eos), "EOS allowed at the end");
    check(m.accept_token(eos) && !m.can_end() && m.is_finished(), "EOS accepted at the end");
    check(!m.accept_token(tokenizer.encode("a", false, false)[0]) && !m.accept_token(eos), "nothing after EOS");

    // apply_mask: -inf exactly where the bit is clear, and on padding ids past the vocabulary.
    GrammarMatcher r(compile_regex("[0-9]+"), vocab);
    r.fill_allowed(bits);
    std::vector<float> logits(static_cast<size_t>(vocab->size()) + 16, 1.0f);
    r.apply_mask(logits.data(), static_cast<int32_t>(logits.size()));
    int wrong = 0;
    for (size_t id = 0; id < logits.size(); ++id) {
        const bool allowed = id < static_cast<size_t>(vocab->size()) && test_bit(bits, static_cast<int32_t>(id));
        wrong += allowed != (logits[id] == 1.0f);
        if (!allowed) wrong += !std::isinf(logits[id]);
    }
    check(wrong == 0, "apply_mask matches fill_allowed, padding masked");
    try {
        GrammarMatcher bad(json_object_grammar(), nullptr);
        check(false, "null vocabulary refused");
    } catch (const Error& e) {
        check(std::string(e.what()).find("no vocabulary") != std::string::npos, "null vocabulary refused");
    }
}

void test_jump_forward(const std::shared_ptr<const Vocabulary>& vocab) {
    auto g = compile_gbnf("root ::= \"The answer is: \" [a-z]+ \" (final)\"\n");
    GrammarMatcher m(g, vocab);
    check(m.forced_continuation() == "The answer is: ", "forced continuation '" + m.forced_continuation() + "'");
    const std::vector<int32_t> canonical = vocab->tokenize("The answer is: ");
    const std::vector<int32_t> jump = m.jump_forward_tokens();
    check(canonical.size() >= 2 && jump == std::vector<int32_t>(canonical.begin(), canonical.end() - 1),
          "jump-forward = canonical tokens of the forced text, last held back (" + std::to_string(jump.size()) + " of " +
              std::to_string(canonical.size()) + ")");
    std::vector<uint64_t> bits;
    m.fill_allowed(bits);
    int allowed = 0;
    for (uint64_t w : bits) allowed += __builtin_popcountll(w);
    check(allowed == 1 && test_bit(bits, canonical[0]), "a forced state allows only the canonical first token");
    for (int32_t id : jump) check(m.accept_token(id), "jump-forward token accepted");
    check(m.forced_continuation() == " ", "after the jump the held-back token remains free");
    m.fill_allowed(bits);
    int free_allowed = 0;
    for (uint64_t w : bits) free_allowed += __builtin_popcountll(w);
    check(free_allowed > 1, "the held-back token's step has a free choice (" + std::to_string(free_allowed) + " tokens)");
    check(m.jump_forward_tokens().empty(), "nothing more to jump");
    // A grammar that forces far more bytes than one jump takes: jump-forward
    // stays bounded. (One that never ends, root ::= "ab" root, admits no text
    // and is refused at compile time: test_grammar.)
    GrammarMatcher endless(compile_gbnf("root ::= (\"ab\"){20000}\n"), vocab);
    size_t jumped = 0;
    for (int32_t id : endless.jump_forward_tokens()) jumped += vocab->token_bytes(id).size();
    check(jumped > 0 && jumped <= kMaxForcedBytes + 16, "long forced run: bounded jump (" + std::to_string(jumped) + " bytes)");
}

// A deterministic stand-in for a model: scores depend on the whole token history.
std::vector<int32_t> greedy_decode(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const Vocabulary>& vocab,
                                   bool jump_forward, int* jumped) {
    GrammarMatcher m(g, vocab);
    std::vector<int32_t> history;
    std::vector<uint64_t> bits;
    uint64_t h = 1469598103934665603ull;
    auto push = [&](int32_t id) {
        history.push_back(id);
        h = (h ^ static_cast<uint64_t>(id)) * 1099511628211ull;
    };
    for (int step = 0; step < 300 && !m.is_finished(); ++step) {
        m.fill_allowed(bits);
        int32_t best = -1;
        uint64_t best_score = 0;
        for (int32_t id = 0; id < vocab->size(); ++id) {
            if (!test_bit(bits, id)) continue;
            // Favour EOG and short tokens a little so decoding ends.
            uint64_t score = ((h ^ (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull) >> 8;
            if (vocab->is_eog(id)) score |= uint64_t{1} << 55;
            if (vocab->token_bytes(id).size() <= 2) score += uint64_t{1} << 54;
            if (best < 0 || score > best_score) best = id, best_score = score;
        }
        if (best < 0 || !m.accept_token(best)) break;
        push(best);
        if (jump_forward) {
            for (int32_t id : m.jump_forward_tokens()) {
                if (!m.accept_token(id)) return {};
                push(id);
                ++*jumped;
            }
        }
    }
    return history;
}

void test_jump_forward_is_exact(const std::shared_ptr<const Vocabulary>& vocab) {
    const std::vector<std::pair<std::string, std::shared_ptr<const Grammar>>> grammars = {
        {"literal", compile_gbnf("root ::= \"The answer is: \" [0-9]{1,3} \" (final answer, no more)\"\n")},
        {"schema", compile_json_schema(R"({"type":"object","properties":{"first_name":{"type":"string","maxLength":8},
            "favourite_colour":{"enum":["dark blue","light green"]},"is_student":{"type":"boolean"}},
            "required":["first_name","favourite_colour","is_student"]})")},
        {"choice", compile_choice({"Supercalifragilistic", "Superman returns"})},
    };
    for (const auto& [name, g] : grammars) {
        int jumped_off = 0, jumped_on = 0;
        const std::vector<int32_t> off = greedy_decode(g, vocab, false, &jumped_off);
        const std::vector<int32_t> on = greedy_decode(g, vocab, true, &jumped_on);
        check(!off.empty() && off == on, name + ": greedy tokens identical with and without jump-forward");
        check(jumped_on > 0, name + ": jump-forward appended " + std::to_string(jumped_on) + " tokens");
    }
}

void test_simulations(const std::shared_ptr<const Vocabulary>& vocab) {
    for (const Case& c : cases()) {
        for (uint64_t seed = 1; seed <= 6; ++seed) {
            const auto sim = simulate(c.grammar, vocab, seed, static_cast<int>(seed * 4), seed % 2 == 0);
            ParserStates states(c.grammar);
            const int32_t s = states.advance(states.initial(), sim.text);
            check(sim.complete && s != ParserStates::kDead && states.can_end(s),
                  c.name + " seed " + std::to_string(seed) + ": simulated text is complete: '" + sim.text.substr(0, 200) + "'");
        }
    }
}

void test_state_compaction(const std::shared_ptr<const Vocabulary>& vocab) {
    // Every nesting depth is a new state: far more than the matcher keeps.
    GrammarMatcher m(compile_gbnf("root ::= \"[\" root? \"]\"\n"), vocab);
    const int depth = 6000;
    bool ok = true;
    for (int i = 0; i < depth && ok; ++i) ok = m.accept_bytes("[");
    std::vector<uint64_t> bits;
    m.fill_allowed(bits);
    ok = ok && !m.can_end();
    for (int i = 0; i < depth && ok; ++i) ok = m.accept_bytes("]");
    check(ok && m.can_end() && !m.accept_bytes("]"), "deep nesting across state compaction");
}

// The token path greedy SmolLM2 took on the "recursive tree" schema of
// tests/structured_cases.py, as far as the step whose mask crashed: every
// nesting level makes new parser states, and the mask walk that interned
// them wrote transitions through a reference into the table it had just
// grown (heap corruption, then a wild state id in the trie walk).
void test_recursive_schema_model_path(const std::shared_ptr<const Vocabulary>& vocab) {
    static const int32_t kTokens[] = {
        107, 472, 476, 3221, 18, 1577, 216, 33, 28, 472, 476, 11877, 18, 1577, 933, 448,
        1662, 629, 476, 3221, 18, 1577, 216, 33, 28, 629, 476, 11877, 18, 1577, 933, 1047,
        1662, 1927, 476, 3221, 18, 1577, 216, 33, 28, 1927, 476, 11877, 18, 1577, 933, 3337,
        1662, 5952, 476, 3221, 18, 1577, 216, 33, 28, 5952, 476, 11877, 18, 1577, 933, 9694,
        107, 9694, 18, 3221, 18, 1577, 216, 33, 28, 9694, 18, 11877, 18, 1577, 933, 9694,
        107, 9694, 18, 3221, 18, 1577, 216, 33, 28, 9694, 18, 11877, 18, 1577, 933, 9694,
        107, 9694, 18, 3221, 18, 1577, 216, 33, 28, 9694, 18, 11877, 18, 1577, 933, 9694,
        107, 9694, 18, 3221};
    auto g = compile_json_schema(R"({"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "minimum": 0, "maximum": 99},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["value", "children"]}}, "$ref": "#/$defs/node"})");
    GrammarMatcher m(g, vocab);
    std::vector<uint64_t> bits;
    std::vector<float> logits(static_cast<size_t>(vocab->size()));
    std::string text;
    int refused = 0;
    for (int32_t id : kTokens) {
        m.fill_allowed(bits);
        std::fill(logits.begin(), logits.end(), 0.0f);
        m.apply_mask(logits.data(), vocab->size());
        refused += !test_bit(bits, id) || std::isinf(logits[id]) || !m.accept_token(id);
        text += vocab->token_bytes(id);
        m.jump_forward_tokens();
    }
    check(refused == 0, "recursive schema: every token of the model's path allowed and accepted (" +
                            std::to_string(refused) + " refused)");
    // The state the crash happened in: its mask against brute force.
    m.fill_allowed(bits);
    ParserStates states(g);
    const int32_t s = states.advance(states.initial(), text);
    const int32_t forced = forced_first_token(*vocab, states, s);
    int wrong = 0;
    for (int32_t id = 0; id < vocab->size(); ++id) {
        const std::string_view b = vocab->token_bytes(id);
        const bool expected = forced >= 0 ? id == forced
                                          : vocab->is_eog(id) ? states.can_end(s)
                                                              : !b.empty() && states.advance(s, b) != ParserStates::kDead;
        wrong += expected != test_bit(bits, id);
    }
    check(s != ParserStates::kDead && wrong == 0,
          "recursive schema: mask after the model's path equals brute force (" + std::to_string(wrong) + " wrong)");
}

void report_mask_speed(const std::shared_ptr<const Vocabulary>& vocab) {
    GrammarMatcher m(json_object_grammar(), vocab);
    m.accept_bytes("{\"text\": \"");
    std::vector<uint64_t> bits;
    double t0 = now_seconds();
    m.fill_allowed(bits);
    const double first = now_seconds() - t0;
    t0 = now_seconds();
    m.accept_bytes("abc");
    m.fill_allowed(bits);
    const double again = now_seconds() - t0;
    std::printf("mask inside a JSON string: first %.3f ms, same state again %.3f ms\n", first * 1e3, again * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
    return structured_sim::run_with_vocabulary(argc, argv, [](const structured_sim::LoadedVocabulary& loaded) {
        test_trie(*loaded.vocabulary);
        test_trie_built_once(*loaded.tokenizer);
        test_masks_against_brute_force(loaded.vocabulary);
        test_control_tokens_and_errors(loaded.vocabulary, *loaded.tokenizer);
        test_jump_forward(loaded.vocabulary);
        test_jump_forward_is_exact(loaded.vocabulary);
        test_simulations(loaded.vocabulary);
        test_state_compaction(loaded.vocabulary);
        test_recursive_schema_model_path(loaded.vocabulary);
        report_mask_speed(loaded.vocabulary);
    });
}
