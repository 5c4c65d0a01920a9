// GrammarCompiler and WorkDeadline against SmolLM2's vocabulary: a compile
// runs on a worker and answers the caller; identical keys share one grammar;
// the size and time budgets refuse naming their engine options; a deadline
// stops the automaton's work without breaking it (the matcher resumes and
// finishes the same mask); a mask prepared on a worker is the mask.
//
//   test_grammar_compiler MODEL.gguf
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "structured/grammar_compiler.h"
#include "structured/work_deadline.h"
#include "structured_sim.h"
#include "util/error.h"
#include "check.h"

using namespace vllm;
using namespace vllm::structured;

namespace {

// A JSON schema with `n` optional integer properties: its masks after '{"'
// track n parse stacks (the heavy case of issue 37).
std::string many_properties(int n) {
    std::string schema = R"({"type":"object","properties":{)";
    for (int i = 0; i < n; ++i) schema += (i ? "," : "") + std::string("\"p") + std::to_string(i) + R"(":{"type":"integer"})";
    return schema + "}}";
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void test_compile_and_share(const std::shared_ptr<const Vocabulary>& vocab) {
    GrammarCompiler compiler(vocab, CompileBudget{}, 2);
    const std::string schema = many_properties(2000);
    std::vector<std::shared_ptr<const Grammar>> grammars(4);
    std::vector<std::thread> callers;
    for (size_t i = 0; i < grammars.size(); ++i)
        callers.emplace_back([&, i] { grammars[i] = compile_text(&compiler, ConstraintKind::JsonSchema, schema); });
    for (std::thread& t : callers) t.join();
    bool shared = true;
    for (const auto& g : grammars) shared = shared && g && g == grammars[0];
    check(shared, "four concurrent identical compiles get one grammar");
    check(compile_text(&compiler, ConstraintKind::JsonSchema, schema) == grammars[0], "a recent compile is kept");
    check(compile_text(&compiler, ConstraintKind::Regex, "a|b") != compile_text(&compiler, ConstraintKind::Gbnf,
                                                                               "root ::= \"a\" | \"b\""),
          "different constraints are different compiles");
    const std::string bad = error_of([&] { compile_text(&compiler, ConstraintKind::JsonSchema, R"({"type":"bogus"})"); });
    check(!bad.empty() && bad.find("bogus") != std::string::npos, "a compile error reaches the caller: " + bad);
    const std::string again = error_of([&] { compile_text(&compiler, ConstraintKind::JsonSchema, R"({"type":"bogus"})"); });
    check(again == bad, "and again for the same constraint (refusals are not kept as grammars)");
}

void test_budgets(const std::shared_ptr<const Vocabulary>& vocab) {
    CompileBudget small;
    small.max_grammar_size = 1000;
    GrammarCompiler by_size(vocab, small, 1);
    const std::string big = error_of([&] { compile_text(&by_size, ConstraintKind::JsonSchema, many_properties(2000)); });
    check(big.find("structured_max_grammar_size") != std::string::npos && big.find("compile budget") != std::string::npos,
          "past the size budget: refused naming its option (" + big + ")");
    check(compile_text(&by_size, ConstraintKind::Regex, "yes|no") != nullptr, "a small constraint still compiles");

    CompileBudget quick;
    quick.timeout_ms = 1;
    GrammarCompiler by_time(vocab, quick, 1);
    const std::string slow = error_of([&] { compile_text(&by_time, ConstraintKind::JsonSchema, many_properties(20000)); });
    check(slow.find("structured_compile_timeout_ms") != std::string::npos,
          "past the time budget: refused naming its option (" + slow + ")");
}

void test_deadline_keeps_the_matcher_usable(const std::shared_ptr<const Vocabulary>& vocab) {
    const auto grammar = compile_json_schema(many_properties(3000));
    GrammarMatcher stopped(grammar, vocab);
    check(stopped.accept_bytes("{\""), "the matcher reaches the heavy state");
    bool interrupted = false;
    try {
        const WorkDeadline past(std::chrono::steady_clock::now() - std::chrono::milliseconds(1), "over budget");
        stopped.prepare_mask();
    } catch (const DeadlinePassed& e) {
        interrupted = std::string(e.what()) == "over budget";
    }
    check(interrupted && !stopped.mask_ready(), "a passed deadline stops the mask with its message");
    check(GrammarCompiler::prepare_mask_within(stopped, std::chrono::seconds(60)), "resumed, the mask completes");

    GrammarMatcher fresh(grammar, vocab);
    fresh.accept_bytes("{\"");
    std::vector<uint64_t> a, b;
    stopped.fill_allowed(a);
    fresh.fill_allowed(b);
    check(a == b, "the resumed mask is the mask an uninterrupted matcher computes");
    check(stopped.accept_bytes("p12\": 7}") && fresh.accept_bytes("p12\": 7}") && stopped.can_end() && fresh.can_end(),
          "the matcher goes on after the interruption, as the other does");
}

void test_mask_on_a_worker(const std::shared_ptr<const Vocabulary>& vocab) {
    GrammarCompiler compiler(vocab, CompileBudget{}, 1);
    const auto grammar = compile_text(&compiler, ConstraintKind::JsonSchema, many_properties(3000));
    auto matcher = std::make_shared<GrammarMatcher>(grammar, vocab);
    matcher->accept_bytes("{\"");
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::exception_ptr error;
    compiler.prepare_mask(matcher, [&](std::exception_ptr e) {
        std::lock_guard<std::mutex> lock(mutex);
        error = e;
        done = true;
        done_cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    done_cv.wait(lock, [&] { return done; });
    check(!error && matcher->mask_ready(), "the worker prepared the heavy state's mask");
    GrammarMatcher here(grammar, vocab);
    here.accept_bytes("{\"");
    std::vector<uint64_t> a, b;
    matcher->fill_allowed(a);
    here.fill_allowed(b);
    check(a == b, "the same mask as one computed on this thread");
}

}  // namespace

int main(int argc, char** argv) {
    return structured_sim::run_with_vocabulary(argc, argv, [](const structured_sim::LoadedVocabulary& loaded) {
        test_compile_and_share(loaded.vocabulary);
        test_budgets(loaded.vocabulary);
        test_deadline_keeps_the_matcher_usable(loaded.vocabulary);
        test_mask_on_a_worker(loaded.vocabulary);
    });
}
