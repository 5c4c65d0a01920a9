// Grammar work off the engine loop and off the submitting thread (vLLM's
// structured-output manager, whose requests wait in WAITING_FOR_FSM).
//
// compile(): a constraint is compiled on one of the compiler's worker
// threads while the caller waits, within a budget (time, and the compiled
// grammar's size); past it the caller gets INVALID_ARGUMENT naming the
// budget and its engine option. Identical constraints share one compile
// (in flight or recent). The caller still waits, so submit keeps its C ABI
// promise (a constraint is refused when submit returns), but no thread
// compiles more than the budget allows, and the compiles of many callers
// take the compiler's few threads, not one core each.
//
// prepare_mask(): the engine loop hands a request's next mask to a worker
// when computing it inline would take longer than a slice, and schedules
// the request again once it is ready (the budget applies to it too).
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "structured/grammar.h"
#include "structured/structured_output.h"
#include "structured/vocabulary.h"
#include "util/task_workers.h"

namespace vllm::structured {

struct CompileBudget {
    int64_t timeout_ms = 10000;          // engine option structured_compile_timeout_ms
    int64_t max_grammar_size = 8000000;  // engine option structured_max_grammar_size (grammar positions)
};

class GrammarCompiler {
public:
    using Compile = std::function<std::shared_ptr<const Grammar>()>;
    using Prepared = std::function<void(std::exception_ptr error)>;

    GrammarCompiler(std::shared_ptr<const Vocabulary> vocabulary, CompileBudget budget, int n_threads);

    // Runs `compile` on a worker (or shares an identical `key`'s), checks the
    // result against the budget, and computes its first mask (which a
    // grammar too ambiguous from its start fails). Blocks the caller until
    // then; throws what the compile threw or the budget's refusal.
    std::shared_ptr<const Grammar> compile(const std::string& key, Compile compile) const;

    // Computes matcher's current mask on a worker under the budget, then
    // calls done(nullptr) or done(its error) there. The matcher must not be
    // used by anyone else until then.
    void prepare_mask(std::shared_ptr<GrammarMatcher> matcher, Prepared done) const;
    // On the caller's thread for at most `slice`: whether the mask is ready
    // (false: not done in time; what was computed is kept).
    static bool prepare_mask_within(const GrammarMatcher& matcher, std::chrono::microseconds slice);

    const CompileBudget& budget() const { return budget_; }

private:
    using Clock = std::chrono::steady_clock;
    std::string timeout_message(const char* work) const;
    std::shared_ptr<const Grammar> compile_within_budget(const Compile& compile, Clock::time_point deadline) const;
    // `size`: the grammar's positions (0 when it failed).
    void finished(const std::string& key, bool ok, size_t size) const;

    // Finished compiles kept for sharing: at most this many, holding at
    // most kRecentPositions grammar positions together (a handful of huge
    // grammars must not pin gigabytes).
    static constexpr size_t kRecentCompiles = 32;
    static constexpr size_t kRecentPositions = 8000000;

    std::shared_ptr<const Vocabulary> vocabulary_;
    CompileBudget budget_;
    mutable std::mutex mutex_;
    mutable std::map<std::string, std::shared_future<std::shared_ptr<const Grammar>>> compiles_;
    // Keys and sizes of the finished compiles in compiles_, oldest first.
    mutable std::deque<std::pair<std::string, size_t>> recent_;
    mutable size_t recent_positions_ = 0;
    // Last: its threads stop (queued work dropped, running work finished) before the rest goes.
    mutable TaskWorkers workers_;
};

enum class ConstraintKind { JsonSchema, Regex, Gbnf };

// The compile_* of `kind` through `compiler`, which shares identical
// constraints (nullptr: on the calling thread, without a budget).
std::shared_ptr<const Grammar> compile_text(const GrammarCompiler* compiler, ConstraintKind kind,
                                            std::string_view text);
std::shared_ptr<const Grammar> compile_choices(const GrammarCompiler* compiler,
                                               const std::vector<std::string>& choices);

}  // namespace vllm::structured
